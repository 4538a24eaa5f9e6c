// `iosonar lustre` in-process on a synthetic clock, for the exporter's tests:
// tick k is stamped kDriverBase + k s (the fixture's first snapshot_time is
// kDriverBase), one Collect per Sample(); all() keeps every line emitted.
#pragma once
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exporters/framework/exporter.h"

namespace iosonar::exporters {
extern const Descriptor kLustreExporter;
}

namespace iosonar::test {

inline constexpr int64_t kDriverBase = 1700000000LL * 1000000000LL;
inline constexpr int64_t kDriverSec = 1000000000LL;

class LustreDriver {
 public:
  LustreDriver(std::vector<std::string> args, const std::string& host) : ctx_(host, "", 4242, "lustre") {
    args.insert(args.begin(), "lustre");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    auto opts = exporters::ParseOptions(exporters::kLustreExporter, static_cast<int>(argv.size()), argv.data());
    REQUIRE(opts.ok());
    auto e = exporters::kLustreExporter.create(*opts);
    REQUIRE(e.ok());
    exp_ = std::move(*e);
    ctx_.set_quiet(true);
    ctx_.StartTick(0, kDriverBase, kDriverSec, kDriverSec);
    REQUIRE(exp_->Init(ctx_).ok());
  }
  std::string Sample() {
    const auto k = static_cast<int64_t>(tick_);
    ctx_.StartTick(tick_, kDriverBase + k * kDriverSec, kDriverSec + k * kDriverSec, kDriverSec);
    exp_->Collect(ctx_);
    std::string out = ctx_.FinishTick(1000);
    all_ += out;
    ++tick_;
    return out;
  }
  const std::string& all() const { return all_; }

 private:
  exporters::Context ctx_;
  std::unique_ptr<exporters::Exporter> exp_;
  uint64_t tick_ = 0;
  std::string all_;
};

}  // namespace iosonar::test
