// Reads of statistics files on a watchdog: a Lustre proc file whose read
// blocks inside the kernel (a hung server, an evicted client) must not stall
// the sample of every other source, and no signal can interrupt such a read.
//
// Every read runs on a reader thread while the sampling thread waits at most
// timeout_ms for it. A read that misses its deadline is abandoned for that
// sample: its thread is left to it (it ends by itself once the read returns),
// the caller reports the source, and that path is not read again while its
// old read is still stuck (so one hung file costs one thread, not one per
// sample). At most max_stuck threads may be stuck at once; past that, no read
// is started (each is reported) until one of them returns. One live reader
// thread is reused from read to read.
//
// The read itself is ReadFn (the exporter's ReadWhole), which reads into the
// buffer it is given: buffers move to the reader thread and back, so an
// abandoned read writes only into a buffer nobody else uses.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace iosonar::lustre {

class ReadWatchdog {
 public:
  // path, buffer, bytes read, size bound, error, vanished -> ok
  using ReadFn = std::function<bool(const std::string&, std::string*, size_t*, int64_t, std::string*, bool*)>;
  // One step of a streamed read (open a file, read its next chunk): buffer,
  // bytes, error, vanished -> ok. The step owns what it holds (a shared fd):
  // an abandoned step keeps it until its call returns.
  using StepFn = std::function<bool(std::string*, size_t*, std::string*, bool*)>;
  enum Outcome { kOk, kFailed, kTimedOut, kStillStuck, kTooManyStuck };

  ReadWatchdog(ReadFn fn, int timeout_ms, size_t max_stuck = 8);
  ~ReadWatchdog();
  ReadWatchdog(const ReadWatchdog&) = delete;
  ReadWatchdog& operator=(const ReadWatchdog&) = delete;

  // Like fn, on the reader thread: kOk (text in *buf, *len bytes), kFailed
  // (fn's error and vanished), or not read (kTimedOut, kStillStuck,
  // kTooManyStuck) with *err saying why. timeout_ms <= 0: fn here, no thread.
  Outcome Read(const std::string& path, std::string* buf, size_t* len, int64_t max, std::string* err,
               bool* vanished);
  // step instead of fn, with the same deadline and the same bookkeeping of
  // stuck paths: a file read in chunks is one step per chunk, so the
  // deadline bounds each read(2) (a file that streams is not hung however
  // long it is), and a stuck chunk marks path stuck like a stuck whole read.
  Outcome Run(const std::string& path, StepFn step, std::string* buf, size_t* len, std::string* err,
              bool* vanished);
  size_t stuck() const;  // reads abandoned and not returned yet

 private:
  struct Shared;
  struct Worker;
  ReadFn fn_;
  int timeout_ms_;
  size_t max_stuck_;
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<Worker> live_;
};

}  // namespace iosonar::lustre
