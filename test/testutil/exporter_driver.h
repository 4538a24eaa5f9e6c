// Any exporter in-process on a synthetic clock, for the exporters' tests:
// options parsed from args exactly as the command line would be, tick k
// stamped kDriverBase + k * interval (monotonic clock kDriverSec + k *
// interval), one Collect per Sample(); all() keeps every line emitted.
#pragma once
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exporters/framework/exporter.h"

namespace iosonar::test {

inline constexpr int64_t kDriverBase = 1700000000LL * 1000000000LL;
inline constexpr int64_t kDriverSec = 1000000000LL;

class ExporterDriver {
 public:
  ExporterDriver(const exporters::Descriptor& d, std::vector<std::string> args, const std::string& host = "fixture-host")
      : ctx_(host, "", 4242, d.name) {
    args.insert(args.begin(), d.name);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    auto opts = exporters::ParseOptions(d, static_cast<int>(argv.size()), argv.data());
    INFO(opts.status().ToString());
    REQUIRE(opts.ok());
    interval_ns_ = static_cast<int64_t>(opts->Seconds("interval") * 1e9);
    auto e = d.create(*opts);
    INFO(e.status().ToString());
    REQUIRE(e.ok());
    exp_ = std::move(*e);
    ctx_.set_quiet(true);
    ctx_.StartTick(0, kDriverBase, kDriverSec, interval_ns_);
    auto init = exp_->Init(ctx_);
    INFO(init.ToString());
    REQUIRE(init.ok());
  }
  std::string Sample() {
    const auto k = static_cast<int64_t>(tick_);
    ctx_.StartTick(tick_, kDriverBase + k * interval_ns_, kDriverSec + k * interval_ns_, interval_ns_);
    exp_->Collect(ctx_);
    std::string out = ctx_.FinishTick(1000);
    all_ += out;
    ++tick_;
    return out;
  }
  const std::string& all() const { return all_; }
  uint64_t warnings() const { return ctx_.warnings_total(); }

 private:
  exporters::Context ctx_;
  std::unique_ptr<exporters::Exporter> exp_;
  int64_t interval_ns_ = kDriverSec;
  uint64_t tick_ = 0;
  std::string all_;
};

}  // namespace iosonar::test
