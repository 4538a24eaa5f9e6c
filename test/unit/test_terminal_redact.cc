// The one redaction (RedactUrl over any message) and the one terminal
// escaping (TerminalSafe) that every printer goes through (issue 39).
#include <catch2/catch.hpp>

#include "core/base/terminal.h"
#include "core/base/url.h"

using namespace iosonar;

TEST_CASE("RedactUrl: every URL in a message, wherever it stands", "[redact]") {
  CHECK(RedactUrl("forward to http://user:SECRET@127.0.0.1:9/: failed to connect to http://user:SECRET@127.0.0.1:9/_bulk") ==
        "forward to http://user:***@127.0.0.1:9/: failed to connect to http://user:***@127.0.0.1:9/_bulk");
  CHECK(RedactUrl("output 'lumberjack://a:SECRET@h:1?token=T0K&x=1' refused") ==
        "output 'lumberjack://a:***@h:1?token=***&x=1' refused");
  CHECK(RedactUrl("bad URL \"es+https://u:SECRET@\": no host") == "bad URL \"es+https://u:***@\": no host");
  CHECK(RedactUrl("(http://u:SECRET@h) and https://h/?password=SECRET") == "(http://u:***@h) and https://h/?password=***");
  CHECK(RedactUrl("no url here: a:b@c") == "no url here: a:b@c");
  CHECK(RedactUrl("tcp://host:5170 then tcp://h2:1") == "tcp://host:5170 then tcp://h2:1");
}

TEST_CASE("TerminalSafe: control characters from stored data are shown, not obeyed", "[terminal]") {
  CHECK(TerminalSafe("/scratch/\x1b[2J\x1b]0;owned\x07x.dat\n") == "/scratch/\\x1b[2J\\x1b]0;owned\\x07x.dat\n");
  CHECK(TerminalSafe("a\rb\bc\x7f\td") == "a\\x0db\\x08c\\x7f\td");
  CHECK(TerminalSafe("csi \xc2\x9b" "31m") == "csi \\xc2\\x9b31m");  // U+009B
  CHECK(TerminalSafe("caf\xc3\xa9 \xe2\x82\xac") == "caf\xc3\xa9 \xe2\x82\xac");  // printable UTF-8 stays
}
