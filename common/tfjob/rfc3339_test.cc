#include "taas/tfjob/rfc3339.h"

#include <doctest/doctest.h>

#include "test_support.h"

namespace taas::tfjob {
namespace {

using testing::At;

TEST_CASE("timestamps are written as Kubernetes writes them") {
  CHECK(FormatRfc3339(At(0)) == "2026-01-01T00:00:00Z");
  CHECK(FormatRfc3339(At(3600 * 25 + 61)) == "2026-01-02T01:01:01Z");
  CHECK(FormatRfc3339(Time(std::chrono::seconds(0))) == "1970-01-01T00:00:00Z");
}

TEST_CASE("timestamps parse with fractions, offsets and either letter case") {
  struct Case {
    const char* text;
    Time expected;
  };
  const Case cases[] = {
      {"2026-01-01T00:00:00Z", At(0)},
      {"2026-01-01t00:00:07z", At(7)},
      {"2026-01-01T00:00:07.999999Z", At(7)},
      {"2026-01-01T02:00:00+02:00", At(0)},
      {"2025-12-31T23:30:00-00:30", At(0)},
      {"2024-02-29T12:00:00Z",
       Time(std::chrono::sys_days(std::chrono::year(2024) / 2 / 29)) + std::chrono::hours(12)},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const auto parsed = ParseRfc3339(c.text);
    REQUIRE(parsed.ok());
    CHECK(*parsed == c.expected);
  }
}

TEST_CASE("malformed timestamps are rejected with the text in the message") {
  for (const char* text :
       {"", "2026-01-01", "2026-01-01T00:00:00", "2026-01-01 00:00:00Z", "2026-13-01T00:00:00Z",
        "2025-02-29T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:00:00.Z",
        "2026-01-01T00:00:00+0200", "2026-01-01T00:00:00Zjunk", "yesterday"}) {
    CAPTURE(text);
    const auto parsed = ParseRfc3339(text);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(parsed.status().message()).find(std::string("\"") + text + "\"") !=
          std::string::npos);
  }
}

TEST_CASE("formatting and parsing round-trip") {
  for (int seconds : {0, 59, 86399, 86400, 31536000}) {
    const auto parsed = ParseRfc3339(FormatRfc3339(At(seconds)));
    REQUIRE(parsed.ok());
    CHECK(*parsed == At(seconds));
  }
}

}  // namespace
}  // namespace taas::tfjob
