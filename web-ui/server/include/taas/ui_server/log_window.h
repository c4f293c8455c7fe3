// The end of a replica's output within a window of bytes: the one rule of every log answer, the
// local launcher's and Kubernetes' alike, followed or not. Whole lines, newest last; the oldest
// line shown that does not fit whole shows its end behind a marker saying how many bytes were
// cut, so a line longer than the window keeps its last bytes instead of vanishing (a 10 MiB line
// under an 8 MiB window). A cut never splits a UTF-8 character. Memory is bounded by about
// twice the window, whatever the lines' lengths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <string_view>

namespace taas::ui_server {

// The window of a log answer unless the request asks less (`limitBytes`): ApiOptions'
// max_log_bytes by default.
inline constexpr std::int64_t kDefaultLogWindowBytes = std::int64_t{8} << 20;

// What stands before the kept end of a cut line: "[taas: 10485760 bytes cut] ". The front end
// shows it apart (web-ui/src/logic.ts, cutMarkerPattern, which must match it).
std::string CutMarker(std::uint64_t cut_bytes);

// Where the last at most `keep` bytes of `text` start, moved forward past UTF-8 continuation
// bytes (at most 3) so that what is kept starts with a whole character.
std::size_t CutPoint(std::string_view text, std::size_t keep);

// A piece of output kept as its end: `text` from `start` on, after `cut` bytes dropped before it.
struct KeptLine {
  std::string text;
  std::size_t start = 0;  // text[0, start) is dropped too (kept in memory until compacted)
  std::uint64_t cut = 0;  // bytes dropped before text[0]

  std::string_view visible() const { return std::string_view(text).substr(start); }
  std::uint64_t dropped() const { return cut + start; }
  // Appends `data`, keeping at most `window` visible bytes (the line's end).
  void Append(std::string_view data, std::size_t window);
  // Drops what is hidden: afterwards start == 0.
  void Compact();
  // The line as shown in at most `room` bytes (its newline included when `ended`): whole, or its
  // end behind CutMarker; empty when not even the marker and one byte fit.
  std::string Render(std::size_t room, bool ended) const;
};

class LogWindow {
 public:
  // At most `max_lines` (>= 1) lines and `window_bytes` (>= 1) bytes are kept and shown, markers
  // and newlines included.
  explicit LogWindow(std::size_t window_bytes,
                     std::size_t max_lines = std::numeric_limits<std::size_t>::max());

  // More output, in pieces of any size: a line ends at '\n'.
  void Feed(std::string_view data);

  // Lines ended so far, ever: the n-th (from 0) is line number n, for a follower's next call.
  std::uint64_t lines_ended() const { return ended_; }

  // The kept lines numbered `first` and later, then the unfinished line, as text: the newest that
  // fit `window_bytes` and `max_lines` (and the window's own), each whole line ending in '\n',
  // the oldest shown cut behind CutMarker when it does not fit whole.
  std::string Text(std::uint64_t first = 0,
                   std::size_t window_bytes = std::numeric_limits<std::size_t>::max(),
                   std::size_t max_lines = std::numeric_limits<std::size_t>::max()) const;

  // Bytes held in memory (at most about twice the window): for tests.
  std::size_t held_bytes() const;

 private:
  void Evict();

  const std::size_t window_;
  const std::size_t max_lines_;
  std::deque<KeptLine> lines_;  // ended lines, oldest first; each's visible part <= window
  std::size_t bytes_ = 0;       // visible bytes of lines_, newlines included
  std::uint64_t ended_ = 0;
  KeptLine unfinished_;
};

// Cuts a followed stream's long lines as they pass: complete lines go out at once, each longer
// than the window as its end behind CutMarker; an unfinished line waits (at most its last window
// bytes are held) for its newline or for Finish.
class LineCutter {
 public:
  explicit LineCutter(std::size_t window_bytes) : window_(window_bytes) {}
  // The complete lines that `data` ends, cut as above; empty when it ends none.
  std::string Feed(std::string_view data);
  // The unfinished line, cut as above (at the stream's end).
  std::string Finish();

 private:
  const std::size_t window_;
  KeptLine line_;
};

}  // namespace taas::ui_server
