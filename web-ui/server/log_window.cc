#include "taas/ui_server/log_window.h"

#include <algorithm>
#include <utility>

namespace taas::ui_server {
namespace {

// `at` moved past the UTF-8 continuation bytes (10xxxxxx) there, at most 3: a character is at
// most 4 bytes, so a longer run is not UTF-8 and is cut as bytes.
std::size_t SkipContinuation(std::string_view text, std::size_t at) {
  for (int i = 0;
       i < 3 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80; ++i) {
    ++at;
  }
  return at;
}

// Appends `data` to the unfinished `line`, handing each line it ends to `ended`, which takes it
// (`line` starts anew).
template <typename Ended>
void SplitLines(std::string_view data, std::size_t window, KeptLine& line, Ended&& ended) {
  for (;;) {
    const std::size_t newline = data.find('\n');
    line.Append(data.substr(0, newline), window);
    if (newline == std::string_view::npos) return;
    ended(std::exchange(line, KeptLine{}));
    data.remove_prefix(newline + 1);
  }
}

}  // namespace

std::string CutMarker(std::uint64_t cut_bytes) {
  return "[taas: " + std::to_string(cut_bytes) + " bytes cut] ";
}

std::size_t CutPoint(std::string_view text, std::size_t keep) {
  if (keep >= text.size()) return 0;
  return SkipContinuation(text, text.size() - keep);
}

void KeptLine::Append(std::string_view data, std::size_t window) {
  if (data.size() >= window) {
    // Nothing held stays visible: copy only the end of `data`, however long it is.
    const std::size_t skip = data.size() - window;
    cut += text.size() + skip;
    text.assign(data.substr(skip));
    start = cut > 0 ? SkipContinuation(text, 0) : 0;
    return;
  }
  text.append(data);
  if (text.size() - start > window) start = SkipContinuation(text, text.size() - window);
  // Hidden bytes are dropped once they are as many as the window: memory stays under twice it.
  if (start >= window) Compact();
}

void KeptLine::Compact() {
  cut += start;
  text.erase(0, start);
  start = 0;
}

std::string KeptLine::Render(std::size_t room, bool ended) const {
  const std::string_view shown = visible();
  const std::size_t newline = ended ? 1 : 0;
  std::string out;
  if (dropped() == 0 && shown.size() + newline <= room) {
    out.assign(shown);
  } else {
    // Room for the longest marker this line can need: the one saying all of it was cut.
    const std::size_t reserve = CutMarker(dropped() + shown.size()).size() + newline;
    if (room <= reserve) return out;
    const std::size_t from = CutPoint(shown, room - reserve);
    if (from >= shown.size() && !shown.empty()) return out;
    out = CutMarker(dropped() + from);
    out.append(shown.substr(from));
  }
  if (ended) out += '\n';
  return out;
}

LogWindow::LogWindow(std::size_t window_bytes, std::size_t max_lines)
    : window_(std::max<std::size_t>(window_bytes, 1)),
      max_lines_(std::max<std::size_t>(max_lines, 1)) {}

void LogWindow::Feed(std::string_view data) {
  SplitLines(data, window_, unfinished_, [&](KeptLine line) {
    line.Compact();
    bytes_ += line.text.size() + 1;
    lines_.push_back(std::move(line));
    ++ended_;
    Evict();
  });
}

void LogWindow::Evict() {
  const auto size_of = [](const KeptLine& line) { return line.visible().size() + 1; };
  while (lines_.size() > max_lines_) {
    bytes_ -= size_of(lines_.front());
    lines_.pop_front();
  }
  while (bytes_ > window_) {
    KeptLine& front = lines_.front();
    const std::size_t excess = bytes_ - window_;
    if (excess >= size_of(front)) {
      bytes_ -= size_of(front);
      lines_.pop_front();
      continue;
    }
    // The oldest line keeps its end; Text puts the marker before it.
    const std::size_t before = front.start;
    front.start = SkipContinuation(front.text, front.start + excess);
    bytes_ -= front.start - before;
  }
}

std::string LogWindow::Text(std::uint64_t first, std::size_t window_bytes,
                            std::size_t max_lines) const {
  const std::size_t room = std::min(window_bytes, window_);
  const std::size_t most = std::min(max_lines, max_lines_);
  const std::uint64_t oldest = ended_ - lines_.size();
  const std::size_t begin = static_cast<std::size_t>(std::max(first, oldest) - oldest);
  const bool unfinished = !unfinished_.text.empty() || unfinished_.dropped() > 0;
  const std::size_t count = (lines_.size() - std::min(begin, lines_.size())) + (unfinished ? 1 : 0);
  // Candidate j: lines_[begin + j], the unfinished line last.
  const auto item = [&](std::size_t j) -> const KeptLine& {
    return begin + j < lines_.size() ? lines_[begin + j] : unfinished_;
  };
  const auto ended = [&](std::size_t j) { return begin + j < lines_.size(); };
  // The newest whole lines that fit; the one before them, cut into what room is left.
  std::size_t used = 0;
  std::size_t whole_from = count;
  std::string head;
  for (std::size_t shown = 0; whole_from > 0 && shown < most; ++shown) {
    const std::size_t j = whole_from - 1;
    const KeptLine& line = item(j);
    const std::size_t size = line.visible().size() + (ended(j) ? 1 : 0);
    if (line.dropped() > 0 || used + size > room) {
      head = line.Render(room - used, ended(j));
      break;
    }
    used += size;
    whole_from = j;
  }
  std::string text = std::move(head);
  text.reserve(text.size() + used);
  for (std::size_t j = whole_from; j < count; ++j) {
    text.append(item(j).visible());
    if (ended(j)) text += '\n';
  }
  return text;
}

std::size_t LogWindow::held_bytes() const {
  std::size_t held = unfinished_.text.size();
  for (const KeptLine& line : lines_) held += line.text.size();
  return held;
}

std::string LineCutter::Feed(std::string_view data) {
  std::string out;
  SplitLines(data, window_, line_,
             [&](const KeptLine& line) { out += line.Render(window_, /*ended=*/true); });
  return out;
}

std::string LineCutter::Finish() {
  std::string out = line_.Render(window_, /*ended=*/false);
  line_ = KeptLine{};
  return out;
}

}  // namespace taas::ui_server
