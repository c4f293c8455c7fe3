// Private to taas::data: CSV text (RFC 4180) split into rows of fields, incrementally from any
// byte source, so that a file is never held whole and a row is never longer than a stated limit.
// Pure: the bytes come through a function, so tests and the fuzz target feed it strings.
//
// RFC 4180, as Python's csv module writes it: fields separated by the delimiter, rows ended by
// CRLF, LF or CR; a field in double quotes may hold the delimiter, quotes (doubled) and line
// breaks. Stricter than Python's reader, because the input is untrusted and a silent misread
// trains on wrong data: a quote inside an unquoted field and text after a closing quote are
// errors, as is a file that ends inside a quoted field. Blank lines are skipped (Python's writer
// quotes a row of one empty field, so a blank line is never a row). A UTF-8 byte order mark
// before the first row (Excel writes one) is skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/status.h"

namespace taas::data::internal {

// Up to `size` bytes into `out`; 0 at the end of the input.
using ByteSource = std::function<absl::StatusOr<std::size_t>(char* out, std::size_t size)>;

// One row: its fields, unquoted, held as one string and where each field ends, so that reading a
// row allocates nothing once the row's buffers have grown.
struct CsvRow {
  std::string text;               // the fields' bytes, one after the other
  std::vector<std::size_t> ends;  // field i is text[ends[i - 1], ends[i]) (ends[-1] = 0)
  std::int64_t line = 0;          // the line the row starts on, from 1
  std::uint64_t offset = 0;       // the byte offset of the row's first byte

  std::size_t size() const { return ends.size(); }
  std::string_view field(std::size_t i) const {
    const std::size_t begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view(text).substr(begin, ends[i] - begin);
  }
};

class CsvRowSplitter {
 public:
  // `max_row_bytes` bounds a row's bytes (quoted line breaks included), and so what it holds.
  CsvRowSplitter(ByteSource source, char delimiter, std::size_t max_row_bytes);

  // The next row into `row`: true; false at the end of the input. DataLoss naming the line (and
  // the field, from 1) for a row over max_row_bytes, a stray or unclosed quote, or text after a
  // closing quote; the source's own errors as they are. The splitter is done after an error.
  absl::StatusOr<bool> Next(CsvRow& row);

 private:
  enum class State { kFieldStart, kUnquoted, kQuoted, kQuoteInQuoted };

  absl::StatusOr<bool> Fill();  // more bytes into the buffer: false at the end of the input
  absl::Status Fail(const CsvRow& row, const std::string& what);

  ByteSource source_;
  const char delimiter_;
  const std::size_t max_row_bytes_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0;  // the unread bytes are buffer_[begin_, end_)
  std::size_t end_ = 0;
  std::uint64_t offset_ = 0;  // of buffer_[begin_] in the input
  std::int64_t line_ = 1;     // of buffer_[begin_]
  bool at_start_ = true;      // nothing read yet: a byte order mark may come
  bool after_cr_ = false;     // the last byte was a CR ending a row: a LF next belongs to it
  bool done_ = false;
};

}  // namespace taas::data::internal
