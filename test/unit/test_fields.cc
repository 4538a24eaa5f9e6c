// The declaration lists (core/records/fields.def, datasets.def, io_ops.def)
// and what is generated from them: the schema table, the ids, the dataset
// membership and io.op's values must agree.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <string_view>

#include "core/records/fields.h"
#include "core/records/json_line.h"
#include "core/records/record.h"
#include "core/records/schema.h"
#include "exporters/trace/compress.h"

using namespace iosonar;

namespace {
std::vector<std::string_view> Tokens(std::string_view list) {
  std::vector<std::string_view> out;
  while (!list.empty()) {
    const size_t sp = list.find(' ');
    out.push_back(list.substr(0, sp));
    if (sp == std::string_view::npos) break;
    list.remove_prefix(sp + 1);
  }
  return out;
}
}  // namespace

TEST_CASE("no two fields or datasets are declared with one name", "[fields]") {
  std::set<std::string_view> names;
  for (const auto& f : schema::Fields()) {
    INFO(f.name);
    CHECK(names.insert(f.name).second);
  }
  CHECK(names.size() == kFieldCount);
  std::set<std::string_view> ds;
  for (const auto& d : schema::Datasets()) {
    INFO(d.name);
    CHECK(ds.insert(d.name).second);
  }
  CHECK(ds.size() == kDatasetCount);
}

TEST_CASE("every id carries its position in Fields() and its name", "[fields]") {
  const auto fields = schema::Fields();
  REQUIRE(fields.size() == kFieldCount);
  REQUIRE(std::size(kAllFields) == kFieldCount);
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldId id = kAllFields[i];
    INFO(fields[i].name);
    CHECK(id.index() == i);
    CHECK(id.valid());
    CHECK(id.name() == fields[i].name);
    CHECK(&schema::FieldOf(id) == &fields[i]);
    CHECK(id.key() == "\"" + std::string(fields[i].name) + "\":");
    CHECK(id.member() == ",\"" + std::string(fields[i].name) + "\":");
    CHECK(FieldIndex(id.name()) == static_cast<int>(i));
    auto back = FieldByName(fields[i].name);
    REQUIRE(back);
    CHECK(*back == id);
  }
  CHECK_FALSE(FieldByName("no.such.field"));
  CHECK_FALSE(FieldId{}.valid());
  // A few by hand, so a shifted list shows up even if all of the above moved together.
  CHECK(field::kTimestamp.index() == 0);
  CHECK(fields[field::kIoBytes.index()].name == "io.bytes");
  CHECK(fields[field::kLustreElapsedNs.index()].name == "lustre.elapsed_ns");
  CHECK(fields[field::kScoreboardPeriodJobs.index()].name == "scoreboard.period_jobs");

  const auto datasets = schema::Datasets();
  REQUIRE(std::size(kAllDatasets) == datasets.size());
  for (size_t i = 0; i < datasets.size(); ++i) {
    CHECK(kAllDatasets[i].index() == i);
    CHECK(kAllDatasets[i].name() == datasets[i].name);
    CHECK(&schema::DatasetOf(kAllDatasets[i]) == &datasets[i]);
  }
  CHECK(dataset::kTrace.name() == "iosonar.trace");
  CHECK(dataset::kResultScoreboard.name() == "iosonar.result.scoreboard");
}

TEST_CASE("every dataset a field names is declared, and the membership bits say the same", "[fields]") {
  for (const auto& f : schema::Fields()) {
    INFO(f.name << " in \"" << f.datasets << "\"");
    REQUIRE_FALSE(f.datasets.empty());
    std::set<size_t> listed;
    if (f.datasets == "*") {
      for (size_t i = 0; i < kDatasetCount; ++i) listed.insert(i);
    } else {
      for (auto tok : Tokens(f.datasets)) {
        INFO(tok);
        const schema::Dataset* d = schema::FindDataset(tok);
        REQUIRE(d != nullptr);  // an undeclared dataset
        listed.insert(static_cast<size_t>(d - schema::Datasets().data()));
      }
    }
    const FieldId id = kAllFields[static_cast<size_t>(&f - schema::Fields().data())];
    for (size_t i = 0; i < kDatasetCount; ++i) {
      const bool in = listed.count(i) > 0;
      CHECK((f.dataset_mask >> i & 1) == in);
      CHECK(schema::FieldInDataset(id, kAllDatasets[i]) == in);
      CHECK(schema::FieldInDataset(f, schema::Datasets()[i].name) == in);
    }
    CHECK(f.dataset_mask >> kDatasetCount == 0);
  }
  // Unknown dataset names: only the "*" fields claim them (as before the bits).
  CHECK(schema::FieldInDataset(schema::FieldOf(field::kHostName), "iosonar.nope"));
  CHECK_FALSE(schema::FieldInDataset(schema::FieldOf(field::kIoBytes), "iosonar.nope"));
}

TEST_CASE("io.op's values are the tracer's ops, and its description lists them", "[fields]") {
  const schema::Field& op = schema::FieldOf(field::kIoOp);
  REQUIRE(op.values.size() == trace::kOpCount);
  std::string listed = "Operation: ";
  for (int i = 0; i < trace::kOpCount; ++i) {
    CHECK(op.values[static_cast<size_t>(i)] == trace::OpName(static_cast<trace::Op>(i)));
    if (i) listed += ", ";
    listed += op.values[static_cast<size_t>(i)];
  }
  CHECK(op.description == listed);
  CHECK(op.description ==
        "Operation: read, write, open, close, seek, sync, stat, access, unlink, rename, mkdir, rmdir, dup, flush, mmap");
  CHECK(trace::OpName(trace::kOpFlush) == std::string_view("flush"));
  CHECK(trace::OpName(trace::kOpMmap) == std::string_view("mmap"));
  // Only io.op has a closed list of values.
  for (const auto& f : schema::Fields())
    if (f.name != "io.op") CHECK(f.values.empty());
}

TEST_CASE("JsonLine writes an id's key exactly as the name", "[fields]") {
  char buf[128];
  JsonLine j(buf, sizeof buf);
  j.Begin();
  j.KInt(field::kIoBytes, 7);
  j.KStr(field::kIoOp, "write");
  j.KStr(field::kEventDataset, dataset::kTrace.name());
  j.End();
  REQUIRE(j.ok());
  CHECK(std::string(buf, j.size()) == "{\"io.bytes\":7,\"io.op\":\"write\",\"event.dataset\":\"iosonar.trace\"}\n");
}
