#include "taas/tfjob/rfc3339.h"

#include <cctype>
#include <cstdio>

namespace taas::tfjob {
namespace {

// Reads exactly `digits` decimal digits at `pos`, advancing it.
bool ReadNumber(std::string_view text, std::size_t& pos, int digits, int& out) {
  if (pos + digits > text.size()) return false;
  out = 0;
  for (int i = 0; i < digits; ++i) {
    const char c = text[pos + i];
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    out = out * 10 + (c - '0');
  }
  pos += digits;
  return true;
}

bool Expect(std::string_view text, std::size_t& pos, char lower, char upper) {
  if (pos >= text.size() || (text[pos] != lower && text[pos] != upper)) return false;
  ++pos;
  return true;
}

absl::Status Invalid(std::string_view text) {
  return absl::InvalidArgumentError("invalid RFC 3339 timestamp \"" + std::string(text) +
                                    "\"; expected e.g. 2024-05-01T12:30:00Z");
}

}  // namespace

std::string FormatRfc3339(Time time) {
  const auto days = std::chrono::floor<std::chrono::days>(time);
  const std::chrono::year_month_day date(days);
  const std::chrono::hh_mm_ss clock(time - days);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02dZ", int(date.year()),
                unsigned(date.month()), unsigned(date.day()), int(clock.hours().count()),
                int(clock.minutes().count()), int(clock.seconds().count()));
  return buffer;
}

absl::StatusOr<Time> ParseRfc3339(std::string_view text) {
  std::size_t pos = 0;
  int year, month, day, hour, minute, second;
  if (!ReadNumber(text, pos, 4, year) || !Expect(text, pos, '-', '-') ||
      !ReadNumber(text, pos, 2, month) || !Expect(text, pos, '-', '-') ||
      !ReadNumber(text, pos, 2, day) || !Expect(text, pos, 't', 'T') ||
      !ReadNumber(text, pos, 2, hour) || !Expect(text, pos, ':', ':') ||
      !ReadNumber(text, pos, 2, minute) || !Expect(text, pos, ':', ':') ||
      !ReadNumber(text, pos, 2, second)) {
    return Invalid(text);
  }
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const std::size_t start = pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
    if (pos == start) return Invalid(text);
  }
  int offset_minutes = 0;
  if (Expect(text, pos, 'z', 'Z')) {
    // UTC
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int offset_hours, offset_mins;
    if (!ReadNumber(text, pos, 2, offset_hours) || !Expect(text, pos, ':', ':') ||
        !ReadNumber(text, pos, 2, offset_mins) || offset_hours > 23 || offset_mins > 59) {
      return Invalid(text);
    }
    offset_minutes = sign * (offset_hours * 60 + offset_mins);
  } else {
    return Invalid(text);
  }
  if (pos != text.size()) return Invalid(text);

  const std::chrono::year_month_day date{std::chrono::year(year),
                                         std::chrono::month(static_cast<unsigned>(month)),
                                         std::chrono::day(static_cast<unsigned>(day))};
  // 60 is a leap second, which std::chrono cannot represent; Kubernetes never writes it.
  if (!date.ok() || hour > 23 || minute > 59 || second > 59) return Invalid(text);
  return Time(std::chrono::sys_days(date)) + std::chrono::hours(hour) +
         std::chrono::minutes(minute) + std::chrono::seconds(second) -
         std::chrono::minutes(offset_minutes);
}

}  // namespace taas::tfjob
