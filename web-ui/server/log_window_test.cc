#include "taas/ui_server/log_window.h"

#include <doctest/doctest.h>

#include <optional>
#include <string>

namespace taas::ui_server {
namespace {

constexpr std::size_t kMiB = 1 << 20;

// A line of `n` bytes that ends with `tail`, so that what a cut keeps is recognisable.
std::string LongLine(std::size_t n, const std::string& tail) {
  return std::string(n - tail.size(), 'x') + tail;
}

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The count of the marker that starts `text`, and what follows the marker; no count without one.
struct Marked {
  std::optional<std::uint64_t> cut;
  std::string rest;
};
Marked SplitMarker(const std::string& text) {
  if (!StartsWith(text, "[taas: ")) return {std::nullopt, text};
  const std::uint64_t cut = std::stoull(text.substr(7));
  const std::string marker = CutMarker(cut);
  REQUIRE(StartsWith(text, marker));
  return {cut, text.substr(marker.size())};
}

TEST_CASE(
    "a 10 MiB line under an 8 MiB window shows its end behind the marker, then the lines "
    "after it") {
  const std::size_t window = 8 * kMiB;
  LogWindow log(window, /*max_lines=*/5);
  log.Feed("before\n");
  const std::string line = LongLine(10 * kMiB, "the end of the long line");
  // In pieces, as a pipe or a stream delivers it.
  for (std::size_t at = 0; at < line.size(); at += 8192) log.Feed(line.substr(at, 8192));
  CHECK(log.held_bytes() <= 2 * window);
  log.Feed("\nafter 1\nafter 2\n");
  const std::string text = log.Text();
  CHECK(text.size() <= window);
  CHECK(EndsWith(text, "the end of the long line\nafter 1\nafter 2\n"));
  // Every byte of the line is either shown or counted by the marker; "before" is gone.
  const Marked marked = SplitMarker(text);
  REQUIRE(marked.cut);
  CHECK(*marked.cut + marked.rest.size() - std::string("\nafter 1\nafter 2\n").size() ==
        line.size());
  CHECK(log.held_bytes() <= 2 * window);
  CHECK(log.lines_ended() == 4);
}

TEST_CASE(
    "the window counts newlines: a line and its newline of exactly the window is whole, "
    "one byte more is cut") {
  const std::size_t window = 100;
  LogWindow exact(window);
  const std::string fits = LongLine(window - 1, "end");
  exact.Feed(fits + "\n");
  CHECK(exact.Text() == fits + "\n");

  LogWindow over(window);
  const std::string longer = LongLine(window, "end");
  over.Feed(longer + "\n");
  const std::string text = over.Text();
  CHECK(text.size() <= window);
  CHECK(EndsWith(text, "end\n"));
  const Marked marked = SplitMarker(text);
  REQUIRE(marked.cut);
  CHECK(marked.rest == longer.substr(*marked.cut) + "\n");
}

TEST_CASE(
    "many short lines after a long one: the newest lines win, and the long one shows what "
    "room is left, or nothing") {
  const std::size_t window = 1000;
  LogWindow log(window);
  log.Feed(LongLine(5000, "long end") + "\n");
  for (int i = 0; i < 10; ++i) log.Feed("short line " + std::to_string(i) + "\n");
  std::string text = log.Text();
  CHECK(text.size() <= window);
  Marked marked = SplitMarker(text);
  REQUIRE(marked.cut);
  const std::size_t long_end = marked.rest.find("long end\n") + std::string("long end").size();
  CHECK(*marked.cut + long_end == 5000);
  CHECK(EndsWith(text,
                 "long end\nshort line 0\nshort line 1\n"
                 "short line 2\nshort line 3\nshort line 4\nshort line 5\nshort line 6\n"
                 "short line 7\nshort line 8\nshort line 9\n"));

  // Enough short lines to fill the window: the long line is gone and the oldest short one kept
  // is cut (its own count), never the marker alone.
  for (int i = 10; i < 200; ++i) log.Feed("short line " + std::to_string(i) + "\n");
  text = log.Text();
  CHECK(text.size() <= window);
  CHECK(text.find("long end") == std::string::npos);
  CHECK(EndsWith(text, "short line 199\n"));
  // The oldest short line kept shows its end behind the marker, or goes when no byte of it fits.
  marked = SplitMarker(text);
  CHECK((!marked.cut || *marked.cut < std::string("short line 100").size()));
  CHECK(marked.rest.find('\n') > 0);
  CHECK(log.held_bytes() <= 2 * window);

  // tailLines: the last N lines only, whole when they fit.
  CHECK(log.Text(0, window, 2) == "short line 198\nshort line 199\n");
}

TEST_CASE("a cut never splits a UTF-8 character, and counts the bytes of the one it skips") {
  // "é" is 2 bytes (C3 A9), "€" 3 (E2 82 AC), "𝄞" 4 (F0 9D 84 9E).
  const std::string line = "é€𝄞é€𝄞";  // 18 bytes
  CHECK(CutPoint(line, 18) == 0);
  CHECK(CutPoint(line, 17) == 2);  // into "é": skips its second byte
  CHECK(CutPoint(line, 15) == 5);  // into "€": past it
  CHECK(CutPoint(line, 13) == 5);  // a character's first byte: kept
  CHECK(CutPoint(line, 12) == 9);  // into "𝄞", 3 bytes before its end: past it
  CHECK(CutPoint("\x80\x80\x80\x80\x80", 5 - 1) == 4);  // not UTF-8: at most 3 skipped

  for (std::size_t window = 30; window <= 3 * line.size(); ++window) {
    CAPTURE(window);
    LogWindow log(window);
    log.Feed(line + line + line + "\n");
    const std::string text = log.Text();
    CHECK(text.size() <= window);
    const Marked marked = SplitMarker(text);
    REQUIRE(marked.cut);
    REQUIRE(marked.rest.size() > 1);
    // Whatever the window, what is kept starts with a whole character.
    CHECK((static_cast<unsigned char>(marked.rest[0]) & 0xC0) != 0x80);
    CHECK(*marked.cut + marked.rest.size() - 1 == 3 * line.size());
  }
}

TEST_CASE("a follower asks from a line number: the lines after it, the oldest cut if it was") {
  LogWindow log(64);
  log.Feed("one\ntwo\n");
  const std::uint64_t next = log.lines_ended();
  log.Feed("three\n");
  CHECK(log.Text(next) == "three\n");
  CHECK(log.Text(log.lines_ended()).empty());
  log.Feed(LongLine(200, "four") + "\nfive\n");
  const std::string text = log.Text(next);
  const Marked marked = SplitMarker(text);
  REQUIRE(marked.cut);
  CHECK(*marked.cut + marked.rest.size() == 200 + std::string("\nfive\n").size());
  CHECK(EndsWith(text, "four\nfive\n"));
  CHECK(text.size() <= 64);
}

TEST_CASE("a window too small for a marker shows whole lines only") {
  LogWindow log(8);
  log.Feed("0123456789\nab\n");
  CHECK(log.Text() == "ab\n");
  log.Feed("unfinished");
  CHECK(log.Text().empty());
}

TEST_CASE(
    "a followed stream: short lines pass at once, a long one as its end, an unfinished one "
    "at the end") {
  LineCutter cutter(64);
  CHECK(cutter.Feed("step 1\nstep") == "step 1\n");
  CHECK(cutter.Feed(" 2\n") == "step 2\n");
  const std::string line = LongLine(10 * kMiB, "long end");
  std::string out;
  for (std::size_t at = 0; at < line.size(); at += 65536)
    out += cutter.Feed(line.substr(at, 65536));
  CHECK(out.empty());
  out = cutter.Feed("\nstep 3\nlast");
  CHECK(out.size() <= 64 + std::string("step 3\n").size());
  const Marked marked = SplitMarker(out);
  REQUIRE(marked.cut);
  CHECK(*marked.cut + marked.rest.size() == line.size() + std::string("\nstep 3\n").size());
  CHECK(EndsWith(out, "long end\nstep 3\n"));
  CHECK(cutter.Finish() == "last");
  CHECK(cutter.Finish().empty());
}

}  // namespace
}  // namespace taas::ui_server
