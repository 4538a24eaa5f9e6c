#include "exporters/lustre/read_watchdog.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "core/base/timeutil.h"

namespace iosonar::lustre {

// What the stuck readers share with the sampling thread: the paths whose
// reads were abandoned and have not returned, with when they started.
struct ReadWatchdog::Shared {
  std::mutex mu;
  std::map<std::string, int64_t> stuck;  // path -> start (monotonic ns)
};

struct ReadWatchdog::Worker {
  std::mutex mu;
  std::condition_variable cv;
  bool has_job = false, done = false, quit = false, abandoned = false;
  // the job
  std::string path;
  std::string buf;
  ReadWatchdog::StepFn step;
  // the result
  bool ok = false, vanished = false;
  size_t len = 0;
  std::string err;
  std::thread thread;
};

ReadWatchdog::ReadWatchdog(ReadFn fn, int timeout_ms, size_t max_stuck)
    : fn_(std::move(fn)), timeout_ms_(timeout_ms), max_stuck_(max_stuck), shared_(std::make_shared<Shared>()) {}

ReadWatchdog::~ReadWatchdog() {
  if (live_) {
    {
      std::lock_guard lk(live_->mu);
      live_->quit = true;
    }
    live_->cv.notify_all();
    live_->thread.join();
  }
  // Stuck readers were detached: they end (and free what they hold) once their read returns.
}

size_t ReadWatchdog::stuck() const {
  std::lock_guard lk(shared_->mu);
  return shared_->stuck.size();
}

ReadWatchdog::Outcome ReadWatchdog::Read(const std::string& path, std::string* buf, size_t* len, int64_t max,
                                         std::string* err, bool* vanished) {
  *vanished = false;
  if (timeout_ms_ <= 0) return fn_(path, buf, len, max, err, vanished) ? kOk : kFailed;
  ReadFn fn = fn_;
  return Run(
      path,
      [fn, path, max](std::string* b, size_t* l, std::string* e, bool* v) { return fn(path, b, l, max, e, v); }, buf,
      len, err, vanished);
}

ReadWatchdog::Outcome ReadWatchdog::Run(const std::string& path, StepFn step, std::string* buf, size_t* len,
                                        std::string* err, bool* vanished) {
  *vanished = false;
  if (timeout_ms_ <= 0) return step(buf, len, err, vanished) ? kOk : kFailed;
  {
    std::lock_guard lk(shared_->mu);
    if (auto it = shared_->stuck.find(path); it != shared_->stuck.end()) {
      *err = path + ": its read of " + std::to_string((MonotonicNs() - it->second) / 1000000000) +
             " s ago has not returned (blocked in the kernel?): not read again until it does";
      return kStillStuck;
    }
    if (shared_->stuck.size() >= max_stuck_) {
      *err = path + ": not read: " + std::to_string(shared_->stuck.size()) +
             " reads are blocked (the bound of reader threads); reading resumes when one returns";
      return kTooManyStuck;
    }
  }
  if (!live_) {
    auto w = std::make_shared<Worker>();
    std::shared_ptr<Shared> shared = shared_;
    // The thread holds its state: an abandoned thread frees it when its read returns.
    w->thread = std::thread([w, shared] {
      Worker& me = *w;
      std::unique_lock lk(me.mu);
      for (;;) {
        me.cv.wait(lk, [&] { return me.has_job || me.quit; });
        if (me.quit) return;
        me.has_job = false;
        const std::string rpath = me.path;
        StepFn rstep = std::move(me.step);
        std::string rbuf;
        rbuf.swap(me.buf);
        lk.unlock();
        size_t rlen = 0;
        std::string rerr;
        bool rvanished = false;
        const bool ok = rstep(&rbuf, &rlen, &rerr, &rvanished);
        lk.lock();
        if (me.abandoned) {
          lk.unlock();
          rstep = nullptr;  // what the step holds (an fd) goes now
          std::lock_guard slk(shared->mu);
          shared->stuck.erase(rpath);
          return;
        }
        me.buf.swap(rbuf);
        me.ok = ok;
        me.len = rlen;
        me.err = std::move(rerr);
        me.vanished = rvanished;
        me.done = true;
        me.cv.notify_all();
      }
    });
    live_ = std::move(w);
  }
  Worker& w = *live_;
  std::unique_lock lk(w.mu);
  w.path = path;
  w.step = std::move(step);
  w.buf.swap(*buf);
  w.done = false;
  w.has_job = true;
  w.cv.notify_all();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  if (!w.cv.wait_until(lk, deadline, [&] { return w.done; })) {
    // Missed the deadline: the thread is left to its read, and this path is stuck.
    w.abandoned = true;
    {
      std::lock_guard slk(shared_->mu);
      shared_->stuck.emplace(path, MonotonicNs() - int64_t{timeout_ms_} * 1000000);
    }
    lk.unlock();
    live_->thread.detach();
    live_.reset();
    buf->clear();  // the old buffer stays with the stuck read
    *err = path + ": the read did not return within " + std::to_string(timeout_ms_) +
           " ms (blocked in the kernel?): abandoned for this sample, not read again until it returns";
    return kTimedOut;
  }
  buf->swap(w.buf);
  *len = w.len;
  *vanished = w.vanished;
  if (!w.ok) {
    *err = w.err;
    return kFailed;
  }
  return kOk;
}

}  // namespace iosonar::lustre
