#include "exporters/trace/ring_drainer.h"

#include <chrono>

namespace iosonar::trace {

bool RingDrainer::Start(const std::string& dir, const std::string& output, const std::string& spool_dir, int period_ms,
                        std::string* err) {
  dir_ = dir;
  spool_ = spool_dir;
  sender_ = std::make_unique<LineSender>();
  LineSender::Options o;
  o.output = output.empty() ? "-" : output.c_str();
  o.spool_dir = spool_.empty() ? nullptr : spool_.c_str();
  char e[256];
  if (!sender_->Init(o, e, sizeof e)) {
    *err = e;
    sender_.reset();
    return false;
  }
  th_ = std::thread([this, period_ms] {
    while (!stop_.load()) {
      auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(period_ms);
      while (!stop_.load() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(period_ms < 50 ? period_ms : 50));
      if (stop_.load()) break;
      DrainStats s = DrainDeadRings(dir_.c_str(), sender_.get(), /*live=*/true);
      total_.rings += s.rings;
      total_.lines += s.lines;
      total_.live_lines += s.live_lines;
    }
  });
  return true;
}

DrainStats RingDrainer::Stop() {
  if (!sender_) return total_;
  stop_ = true;
  if (th_.joinable()) th_.join();
  DrainStats s = DrainDeadRings(dir_.c_str(), sender_.get(), /*live=*/false);
  total_.rings += s.rings;
  total_.lines += s.lines;
  total_.skipped = s.skipped;
  sender_->Close();
  sender_.reset();
  return total_;
}

RingDrainer::~RingDrainer() { Stop(); }

}  // namespace iosonar::trace
