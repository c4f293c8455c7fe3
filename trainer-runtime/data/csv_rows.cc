#include "csv_rows.h"

#include <algorithm>
#include <utility>

namespace taas::data::internal {
namespace {

constexpr std::size_t kBufferBytes = 64 << 10;
constexpr char kByteOrderMark[] = "\xEF\xBB\xBF";
constexpr std::size_t kByteOrderMarkBytes = 3;

}  // namespace

CsvRowSplitter::CsvRowSplitter(ByteSource source, char delimiter, std::size_t max_row_bytes)
    : source_(std::move(source)),
      delimiter_(delimiter),
      max_row_bytes_(max_row_bytes),
      buffer_(kBufferBytes) {}

absl::StatusOr<bool> CsvRowSplitter::Fill() {
  begin_ = 0;
  end_ = 0;
  TAAS_ASSIGN_OR_RETURN(const std::size_t got, source_(buffer_.data(), buffer_.size()));
  end_ = std::min(got, buffer_.size());
  return end_ > 0;
}

absl::Status CsvRowSplitter::Fail(const CsvRow& row, const std::string& what) {
  done_ = true;
  return absl::DataLossError("line " + std::to_string(line_) + ", field " +
                             std::to_string(row.size() + 1) + ": " + what);
}

absl::StatusOr<bool> CsvRowSplitter::Next(CsvRow& row) {
  if (done_) return false;
  row.text.clear();
  row.ends.clear();
  row.line = line_;
  row.offset = offset_;
  State state = State::kFieldStart;
  bool content = false;  // the row has a byte besides its line break (else it is a blank line)
  std::size_t row_bytes = 0;
  std::size_t mark_seen = 0;  // bytes of a byte order mark read at the start of the input
  std::int64_t quote_line = 0;
  const auto end_row = [&](char c) {
    if (c == '\r') after_cr_ = true;
    ++line_;
  };
  for (;;) {
    if (begin_ == end_) {
      absl::StatusOr<bool> more = Fill();
      if (!more.ok()) {
        done_ = true;
        return more.status();
      }
      if (!*more) {
        done_ = true;
        if (at_start_ && mark_seen > 0) {  // the input is a part of a mark: text, not a mark
          row.text.append(kByteOrderMark, mark_seen);
          content = true;
        }
        if (state == State::kQuoted) {
          return Fail(row, "the file ends inside the quoted field opened on line " +
                               std::to_string(quote_line) +
                               ": a quote that never closes, or a file cut short");
        }
        if (!content) return false;
        row.ends.push_back(row.text.size());
        return true;
      }
    }
    const char c = buffer_[begin_++];
    ++offset_;
    if (after_cr_) {  // CR LF ends one row, not two
      after_cr_ = false;
      if (c == '\n') {
        row.offset = offset_;
        continue;
      }
    }
    if (at_start_) {
      if (c == kByteOrderMark[mark_seen]) {
        if (++mark_seen == kByteOrderMarkBytes) {
          at_start_ = false;
          row.offset = offset_;
        }
        continue;
      }
      at_start_ = false;
      if (mark_seen > 0) {
        row.text.append(kByteOrderMark, mark_seen);
        row_bytes = mark_seen;
        state = State::kUnquoted;
        content = true;
      }
    }
    if (++row_bytes > max_row_bytes_) {
      return Fail(row, "the row is longer than the limit of " + std::to_string(max_row_bytes_) +
                           " bytes: not a CSV file, a quote that never closes, or rows that "
                           "long (raise max_row_bytes)");
    }
    switch (state) {
      case State::kFieldStart:
      case State::kUnquoted:
        if (c == delimiter_) {
          row.ends.push_back(row.text.size());
          state = State::kFieldStart;
          content = true;
        } else if (c == '\n' || c == '\r') {
          end_row(c);
          if (!content) {  // a blank line: the row starts after it
            row.line = line_;
            row.offset = offset_;
            row_bytes = 0;
            continue;
          }
          row.ends.push_back(row.text.size());
          return true;
        } else if (c == '"') {
          if (state == State::kUnquoted) {
            return Fail(row,
                        "a quote inside an unquoted field: quote the whole field and double the "
                        "quotes inside it (RFC 4180)");
          }
          state = State::kQuoted;
          quote_line = line_;
          content = true;
        } else {
          row.text.push_back(c);
          state = State::kUnquoted;
          content = true;
        }
        break;
      case State::kQuoted:
        if (c == '"') {
          state = State::kQuoteInQuoted;
        } else {
          row.text.push_back(c);
          if (c == '\n') ++line_;
        }
        break;
      case State::kQuoteInQuoted:
        if (c == '"') {  // a doubled quote is one quote
          row.text.push_back(c);
          state = State::kQuoted;
        } else if (c == delimiter_) {
          row.ends.push_back(row.text.size());
          state = State::kFieldStart;
        } else if (c == '\n' || c == '\r') {
          end_row(c);
          row.ends.push_back(row.text.size());
          return true;
        } else {
          return Fail(row,
                      "text after a quoted field's closing quote: a quote inside a quoted field "
                      "must be doubled (RFC 4180)");
        }
        break;
    }
  }
}

}  // namespace taas::data::internal
