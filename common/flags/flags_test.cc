#include "taas/flags/flags.h"

#include <doctest/doctest.h>

#include <algorithm>

namespace taas::flags {
namespace {

std::string ErrorOf(const FlagSet& set, const std::vector<std::string>& args) {
  auto parsed = set.Parse(args);
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

TEST_CASE("values come as --name VALUE or --name=VALUE; the rest are positional") {
  std::string path;
  int port = 8080;
  std::int64_t bytes = 1;
  double secs = 10;
  std::chrono::milliseconds timeout{0};
  std::vector<std::string> namespaces = {"default"};
  std::map<std::string, std::string> env;
  bool keep = false;
  FlagSet set;
  set.String("model-dir", &path);
  set.Int("ui-port", 0, 65535, &port);
  set.Int("max-bytes", std::int64_t{0}, std::int64_t{1} << 40, &bytes);
  set.Double("progress-secs", 0, 3600, &secs);
  set.Seconds("idle-timeout", 0, 1e7, &timeout);
  set.List("namespaces", &namespaces);
  set.KeyValues("env", &env);
  set.Switch("keep-ui", &keep);
  auto parsed = set.Parse({"run", "--model-dir", "/m", "job.yaml", "--ui-port=0", "--max-bytes",
                           "1099511627776", "--progress-secs", "0.5", "--idle-timeout=1.5",
                           "--namespaces", "a,,b", "--env", "A=1", "--env=B=x=y", "--keep-ui"});
  REQUIRE(parsed.ok());
  CHECK(parsed->positional == std::vector<std::string>{"run", "job.yaml"});
  CHECK_FALSE(parsed->help);
  CHECK(path == "/m");
  CHECK(port == 0);
  CHECK(bytes == std::int64_t{1} << 40);
  CHECK(secs == 0.5);
  CHECK(timeout == std::chrono::milliseconds(1500));
  CHECK(namespaces == std::vector<std::string>{"a", "b"});
  CHECK(env == std::map<std::string, std::string>{{"A", "1"}, {"B", "x=y"}});
  CHECK(keep);
  CHECK(std::find(parsed->given.begin(), parsed->given.end(), "ui-port") != parsed->given.end());
}

TEST_CASE("every mistake names the flag and what it expects") {
  int port = 8080;
  double secs = 10;
  bool keep = false;
  std::map<std::string, std::string> env;
  std::string dir;
  FlagSet set;
  set.Int("ui-port", 0, 65535, &port);
  set.Double("progress-secs", 0, 3600, &secs);
  set.Switch("keep-ui", &keep);
  set.KeyValues("env", &env);
  set.String("model-dir", &dir);
  CHECK(ErrorOf(set, {"--bogus"}) == "--bogus: unknown option");
  CHECK(ErrorOf(set, {"--bogus=1"}) == "--bogus: unknown option");
  CHECK(ErrorOf(set, {"--model-dir"}) == "--model-dir: needs a value");
  CHECK(ErrorOf(set, {"--ui-port", "http"}) ==
        "--ui-port: expected a number from 0 to 65535, got http");
  CHECK(ErrorOf(set, {"--ui-port", "70000"}) ==
        "--ui-port: expected a number from 0 to 65535, got 70000");
  // Not narrowed: a value past int64 is out of range, not wrapped.
  CHECK(ErrorOf(set, {"--ui-port", "18446744073709551617"}).rfind("--ui-port: expected", 0) == 0);
  CHECK(ErrorOf(set, {"--ui-port", "+1"}).rfind("--ui-port: expected", 0) == 0);
  CHECK(ErrorOf(set, {"--ui-port", "1 "}).rfind("--ui-port: expected", 0) == 0);
  CHECK(ErrorOf(set, {"--progress-secs", "nan"}) ==
        "--progress-secs: expected a number from 0 to 3600, got nan");
  CHECK(ErrorOf(set, {"--progress-secs", "-1"}).rfind("--progress-secs: expected", 0) == 0);
  CHECK(ErrorOf(set, {"--progress-secs", "1e400"}).rfind("--progress-secs: expected", 0) == 0);
  CHECK(ErrorOf(set, {"--keep-ui=yes"}) == "--keep-ui: expected true or false, got yes");
  CHECK(ErrorOf(set, {"--env", "novalue"}) == "--env: expected KEY=VALUE, got novalue");
  CHECK(ErrorOf(set, {"--env", "=x"}) == "--env: expected KEY=VALUE, got =x");
  std::string level = "info";
  set.Choice("log-level", {"debug", "info", "warning", "error"}, &level);
  CHECK(ErrorOf(set, {"--log-level", "dbug"}) ==
        "--log-level: expected debug|info|warning|error, got dbug");
  CHECK(level == "info");
  CHECK(ErrorOf(set, {"--log-level=warning"}).empty());
  CHECK(level == "warning");
  CHECK(port == 8080);
}

TEST_CASE("a whole number binds straight into a duration of the flag's unit") {
  std::chrono::seconds resync{300};
  std::chrono::milliseconds delay{250};
  FlagSet set;
  set.Int("resync-seconds", 0, 86400, &resync);
  set.Int("child-event-delay-ms", 0, 60000, &delay);
  CHECK(ErrorOf(set, {"--resync-seconds", "60", "--child-event-delay-ms=0"}).empty());
  CHECK(resync == std::chrono::seconds(60));
  CHECK(delay == std::chrono::milliseconds(0));
  // The errors of an int: a fraction or a value out of range is refused, the value kept.
  CHECK(ErrorOf(set, {"--resync-seconds", "1.5"}) ==
        "--resync-seconds: expected a number from 0 to 86400, got 1.5");
  CHECK(ErrorOf(set, {"--child-event-delay-ms", "60001"}) ==
        "--child-event-delay-ms: expected a number from 0 to 60000, got 60001");
  CHECK(resync == std::chrono::seconds(60));
  CHECK(delay == std::chrono::milliseconds(0));
}

TEST_CASE("a choice binds the value beside its name") {
  enum class Level { kDebug, kInfo, kError };
  Level level = Level::kInfo;
  FlagSet set;
  set.Choice<Level>("log-level",
                    {{"debug", Level::kDebug}, {"info", Level::kInfo}, {"error", Level::kError}},
                    &level);
  CHECK(ErrorOf(set, {"--log-level=error"}).empty());
  CHECK(level == Level::kError);
  CHECK(ErrorOf(set, {"--log-level", "debug"}).empty());
  CHECK(level == Level::kDebug);
  CHECK(ErrorOf(set, {"--log-level", "Info"}) ==
        "--log-level: expected debug|info|error, got Info");
  CHECK(level == Level::kDebug);
}

TEST_CASE("a switch takes no separate value; --help and -h ask for the usage") {
  bool elect = true;
  FlagSet set;
  set.Switch("leader-elect", &elect);
  auto parsed = set.Parse({"--leader-elect=false", "later"});
  REQUIRE(parsed.ok());
  CHECK_FALSE(elect);
  CHECK(parsed->positional == std::vector<std::string>{"later"});
  parsed = set.Parse({"--leader-elect", "-h"});
  REQUIRE(parsed.ok());
  CHECK(elect);
  CHECK(parsed->help);
  CHECK(set.Parse({"--help"})->help);
}

}  // namespace
}  // namespace taas::flags
