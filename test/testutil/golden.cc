#include "test/testutil/golden.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/records/record.h"
#include "test/testutil/testutil.h"

namespace iosonar::test {

namespace fs = std::filesystem;

std::string FixturesDir() { return SourceDir() + "/test/fixtures"; }
std::string GoldenDir() { return SourceDir() + "/test/golden"; }

// (Not std::regex: GCC 12's <regex> trips -Wmaybe-uninitialized in the sanitizer build.)
std::string BlankValues(const std::string& jsonl, const std::function<bool(std::string_view)>& blank) {
  std::string out;
  for (const auto& l : SplitLines(jsonl)) {
    if (l.empty()) continue;
    rapidjson::Document d;
    d.Parse(l.c_str());
    if (!d.IsObject()) {
      out += l + "\n";
      continue;
    }
    for (auto& m : d.GetObject())
      if (blank(std::string_view(m.name.GetString(), m.name.GetStringLength()))) m.value.SetString("_");
    rapidjson::StringBuffer sb;
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    d.Accept(w);
    out.append(sb.GetString(), sb.GetSize());
    out += '\n';
  }
  return out;
}

std::string BlankVolatile(const std::string& jsonl, std::initializer_list<std::string_view> more) {
  std::vector<std::string_view> keys = {"@timestamp", "event.stream", "host.name", "sampler.duration_ns"};
  keys.insert(keys.end(), more.begin(), more.end());
  return BlankValues(jsonl, [&](std::string_view k) {
    for (std::string_view b : keys)
      if (k == b) return true;
    return false;
  });
}

void CheckGolden(const std::string& name, const std::string& actual) {
  const std::string path = GoldenDir() + "/" + name;
  const char* update = getenv("IOSONAR_UPDATE_GOLDEN");
  if (update && *update && std::string_view(update) != "0") {
    fs::create_directories(GoldenDir());
    WriteFile(path, actual);
    WARN("IOSONAR_UPDATE_GOLDEN: wrote " << path << " (review the diff before committing it)");
    return;
  }
  INFO("golden file " << path << " (IOSONAR_UPDATE_GOLDEN=1 rewrites it; test/fixtures/README.md)");
  REQUIRE(fs::exists(path));
  const std::string expected = ReadFile(path);
  if (expected == actual) return;
  const std::string dump = BinaryDir() + "/golden-actual/" + name;
  fs::create_directories(fs::path(dump).parent_path());
  WriteFile(dump, actual);
  auto e = SplitLines(expected), a = SplitLines(actual);
  std::string where;
  int shown = 0;
  for (size_t i = 0; i < std::max(e.size(), a.size()) && shown < 3; ++i) {
    const std::string el = i < e.size() ? e[i] : "(none)", al = i < a.size() ? a[i] : "(none)";
    if (el == al) continue;
    where += "line " + std::to_string(i + 1) + ":\n  golden: " + el + "\n  actual: " + al + "\n";
    ++shown;
  }
  INFO("the records differ (" << e.size() << " golden lines, " << a.size() << " now; all of them in " << dump << "):\n"
                              << where);
  CHECK(expected == actual);
}

void CopyTree(const std::string& from, const std::string& to, std::initializer_list<std::string_view> skip) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) {
    const std::string name = e.path().filename().string();
    bool skipped = false;
    for (std::string_view s : skip) skipped = skipped || name == s;
    if (skipped) continue;
    const fs::path dst = fs::path(to) / name;
    if (e.is_symlink()) {
      fs::remove(dst);
      fs::create_symlink(fs::read_symlink(e.path()), dst);
    } else if (e.is_directory()) {
      CopyTree(e.path().string(), dst.string());
    } else {
      fs::remove(dst);  // a replaced file: a reader holding the old one keeps it
      fs::copy_file(e.path(), dst);
    }
  }
}

void WriteGzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

void CheckRecordsValid(const std::string& jsonl) {
  for (const auto& l : SplitLines(jsonl)) {
    if (l.empty()) continue;
    std::string buf = l + '\0';
    ParsedRecord r;
    Status s = ParseRecordInsitu(buf.data(), l.size(), &r);
    INFO(l << "\n" << s.ToString());
    REQUIRE(s.ok());
  }
}

int Count(const std::string& s, const std::string& needle) {
  int n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace iosonar::test
