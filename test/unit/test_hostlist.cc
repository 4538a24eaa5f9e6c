// Slurm host lists: expansion (zero padding, several prefixes and bracket
// groups, products of groups), compression back to the compact form, and
// malformed lists refused with the offset of the problem.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/jobdb/hostlist.h"

using iosonar::CompressHostlist;
using iosonar::ExpandHostlist;
using Hosts = std::vector<std::string>;

namespace {
Hosts Expand(const std::string& s) {
  auto r = ExpandHostlist(s);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return r.value();
}
}  // namespace

TEST_CASE("hostlist: expansion keeps zero padding and order", "[hostlist]") {
  CHECK(Expand("nid[05398-05399,05401]") == Hosts{"nid05398", "nid05399", "nid05401"});
  CHECK(Expand("node[001-003],gpu[1-2]") == Hosts{"node001", "node002", "node003", "gpu1", "gpu2"});
  CHECK(Expand("n[098-101]") == Hosts{"n098", "n099", "n100", "n101"});
  CHECK(Expand("n[8-11]") == Hosts{"n8", "n9", "n10", "n11"});
  CHECK(Expand("a[1-2]b[3-4]") == Hosts{"a1b3", "a1b4", "a2b3", "a2b4"});
  CHECK(Expand("login1") == Hosts{"login1"});
  CHECK(Expand("rack[1-2]-node[01-02]-ib") ==
        Hosts{"rack1-node01-ib", "rack1-node02-ib", "rack2-node01-ib", "rack2-node02-ib"});
  CHECK(Expand(" a1 , b2  c3,,") == Hosts{"a1", "b2", "c3"});
  CHECK(Expand("n[0]") == Hosts{"n0"});
  CHECK(Expand("").empty());
}

TEST_CASE("hostlist: malformed lists are refused with the offset", "[hostlist]") {
  struct Case {
    const char* list;
    const char* want;
  };
  for (auto c : {Case{"nid[1-3", "never closed"}, Case{"nid1-3]", "without '['"}, Case{"n[[1-2]]", "nested"},
                 Case{"n[]", "empty brackets"}, Case{"n[1,,2]", "empty range"}, Case{"n[3-1]", "backwards"},
                 Case{"n[a-b]", "not a number"}, Case{"n[1-]", "not a number"},
                 Case{"n[1234567890123456789]", "not a number"}, Case{"n[0-99999999]", "more than"}}) {
    auto r = ExpandHostlist(c.list, 100000);
    INFO(c.list);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == iosonar::Code::kInvalid);
    CHECK_THAT(r.status().message(), Catch::Contains(c.want) && Catch::Contains("offset") && Catch::Contains(c.list));
  }
  // Products are bounded too.
  CHECK_FALSE(ExpandHostlist("a[1-1000]b[1-1000]", 100000).ok());
}

TEST_CASE("hostlist: compression folds ranges per prefix and width", "[hostlist]") {
  CHECK(CompressHostlist({"nid05398", "nid05399", "nid05401"}) == "nid[05398-05399,05401]");
  CHECK(CompressHostlist({"node003", "node001", "node002", "gpu2", "gpu1"}) == "node[001-003],gpu[1-2]");
  CHECK(CompressHostlist({"n9", "n10", "n11"}) == "n[9-11]");
  CHECK(CompressHostlist({"n098", "n099", "n100"}) == "n[098-100]");
  CHECK(CompressHostlist({"login", "n1", "login"}) == "login,n1");
  CHECK(CompressHostlist({"n1", "n1", "n2"}) == "n[1-2]");
  CHECK(CompressHostlist({"a1b3", "a1b4", "a2b3"}) == "a1b[3-4],a2b3");
  CHECK(CompressHostlist({}) == "");
}

TEST_CASE("hostlist: compress then expand gives the same set", "[hostlist]") {
  for (const char* list : {"nid[05398-05399,05390-05397,05365,05364,05301]", "n[1-3,5,7-9],m[001-010],x,y[2]",
                           "a[1-2]b[3-4]", "c[0-1]-n[0-3]"}) {
    Hosts h = Expand(list);
    Hosts back = Expand(CompressHostlist(h));
    CHECK(std::set<std::string>(h.begin(), h.end()) == std::set<std::string>(back.begin(), back.end()));
    CHECK(back.size() == std::set<std::string>(h.begin(), h.end()).size());
  }
}
