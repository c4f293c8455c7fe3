#include "taas/data/csv.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "csv_rows.h"
#include "gz_file.h"
#include "taas/data/file_patterns.h"

namespace taas::data {
namespace {

// A header's names listed in an error, at most this many (a file of 10,000 columns would make an
// error of 10,000 names).
constexpr std::size_t kNamesListed = 20;
// The largest max_row_bytes: a cell's length travels as 32 bits (EncodeCells).
constexpr std::size_t kMaxRowBytesLimit = std::size_t{1} << 30;

// The spec's columns in record order: the features, then the label.
std::vector<std::string> RecordColumns(const CsvSpec& spec) {
  std::vector<std::string> columns = spec.feature_columns;
  columns.push_back(spec.label_column);
  return columns;
}

// A record between the reader and the decoder: the row's line, then the cells the spec names, in
// RecordColumns's order, each as its length and bytes:
//   int64 line | uint32 count | count x (uint32 length | bytes)
// The decoder checks every length: a record may come from anywhere.
void EncodeCells(const internal::CsvRow& row, const std::vector<std::size_t>& fields,
                 std::string& out) {
  out.clear();
  const auto append = [&out](const void* value, std::size_t size) {
    out.append(static_cast<const char*>(value), size);
  };
  append(&row.line, sizeof(row.line));
  const auto count = static_cast<std::uint32_t>(fields.size());
  append(&count, sizeof(count));
  for (const std::size_t field : fields) {
    const std::string_view cell = row.field(field);
    const auto length = static_cast<std::uint32_t>(cell.size());
    append(&length, sizeof(length));
    out.append(cell);
  }
}

// The line and cells of a record EncodeCells wrote, viewing `record`; false if it is not one.
bool DecodeCells(std::string_view record, std::int64_t& line,
                 std::vector<std::string_view>& cells) {
  std::uint32_t count = 0;
  if (record.size() < sizeof(line) + sizeof(count)) return false;
  std::memcpy(&line, record.data(), sizeof(line));
  std::memcpy(&count, record.data() + sizeof(line), sizeof(count));
  record.remove_prefix(sizeof(line) + sizeof(count));
  if (count != cells.size()) return false;
  for (std::string_view& cell : cells) {
    std::uint32_t length = 0;
    if (record.size() < sizeof(length)) return false;
    std::memcpy(&length, record.data(), sizeof(length));
    record.remove_prefix(sizeof(length));
    if (record.size() < length) return false;
    cell = record.substr(0, length);
    record.remove_prefix(length);
  }
  return record.empty();
}

std::string_view TrimSpaces(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// A number of type T spanning all of `text` (after an optional '+'), or what is wrong with it.
template <typename T>
std::optional<std::string> ParseNumber(std::string_view text, T& value) {
  if (text.size() > 1 && text.front() == '+' && text[1] != '-') text.remove_prefix(1);
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error == std::errc::result_out_of_range) return std::string("out of range");
  if (error != std::errc() || stop != end) return std::string("not a number");
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(value)) return std::string("not a finite number");
  }
  return std::nullopt;
}

// A cell as it appears in an error: quoted, at most 40 bytes.
std::string Quoted(std::string_view cell) {
  constexpr std::size_t kShown = 40;
  if (cell.size() <= kShown) return "\"" + std::string(cell) + "\"";
  return "\"" + std::string(cell.substr(0, kShown)) + "...\" (" + std::to_string(cell.size()) +
         " bytes)";
}

std::string Listed(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kNamesListed; ++i) {
    out += (i == 0 ? "" : ", ") + names[i];
  }
  if (names.size() > kNamesListed) {
    out += ", ... (" + std::to_string(names.size()) + " columns)";
  }
  return out;
}

class CsvDecoder {
 public:
  explicit CsvDecoder(CsvSpec spec) : spec_(std::move(spec)), columns_(RecordColumns(spec_)) {}

  absl::StatusOr<DecodedExample> operator()(std::string_view record) const {
    std::vector<std::string_view> cells(columns_.size());
    std::int64_t line = 0;
    if (!DecodeCells(record, line, cells)) {
      return absl::DataLossError(
          "not a CSV record (a CsvReader's, with " + std::to_string(columns_.size()) +
          " cells): decode a CsvDataset's records with MakeCsvDecoder of the same spec");
    }
    DecodedExample out;
    out.input.resize(spec_.feature_columns.size());
    for (std::size_t i = 0; i < out.input.size(); ++i) {
      const std::string_view cell = TrimSpaces(cells[i]);
      if (cell.empty()) {
        if (!spec_.missing_value.has_value()) {
          return Error(line, i,
                       "the cell is empty (a missing value): set CsvSpec::missing_value to "
                       "read it as a default");
        }
        out.input[i] = *spec_.missing_value;
      } else if (auto wrong = ParseNumber(cell, out.input[i])) {
        return Error(line, i, Quoted(cells[i]) + " is " + *wrong + " (a float)");
      }
    }
    const std::size_t label = columns_.size() - 1;
    const std::string_view cell = TrimSpaces(cells[label]);
    if (cell.empty()) return Error(line, label, "the label is empty: a label is never missing");
    if (spec_.label_kind == LabelKind::kFloatTarget) {
      out.target.resize(1);
      if (auto wrong = ParseNumber(cell, out.target[0])) {
        return Error(line, label, Quoted(cells[label]) + " is " + *wrong + " (a float target)");
      }
      return out;
    }
    std::int64_t value = 0;
    if (auto wrong = ParseNumber(cell, value)) {
      return Error(line, label, Quoted(cells[label]) + " is " + *wrong + " (a class index)");
    }
    const std::int64_t limit =
        spec_.num_classes > 0 ? spec_.num_classes : std::numeric_limits<std::int32_t>::max();
    if (value < 0 || value >= limit) {
      return Error(line, label,
                   "class " + std::to_string(value) + " is not in [0, " + std::to_string(limit) +
                       ")" + (spec_.num_classes > 0 ? " (CsvSpec::num_classes)" : ""));
    }
    out.label = static_cast<std::int32_t>(value);
    return out;
  }

 private:
  absl::Status Error(std::int64_t line, std::size_t column, const std::string& what) const {
    return absl::DataLossError("line " + std::to_string(line) + ", column \"" + columns_[column] +
                               "\": " + what);
  }

  CsvSpec spec_;
  std::vector<std::string> columns_;  // RecordColumns(spec_)
};

}  // namespace

absl::Status CheckCsvSpec(const CsvSpec& spec) {
  if (spec.feature_columns.empty()) {
    return absl::InvalidArgumentError("csv: feature_columns is empty: name the input's columns");
  }
  if (spec.label_column.empty()) {
    return absl::InvalidArgumentError("csv: label_column is empty: name the label's column");
  }
  std::set<std::string> seen;
  for (const std::string& column : RecordColumns(spec)) {
    if (!seen.insert(column).second) {
      return absl::InvalidArgumentError("csv: column \"" + column +
                                        "\" is named twice in feature_columns and label_column");
    }
  }
  if (spec.delimiter == '"' || spec.delimiter == '\n' || spec.delimiter == '\r') {
    return absl::InvalidArgumentError("csv: the delimiter cannot be a quote or a line break");
  }
  if (spec.max_row_bytes < 1 || spec.max_row_bytes > kMaxRowBytesLimit) {
    return absl::InvalidArgumentError("csv: max_row_bytes must be in [1, " +
                                      std::to_string(kMaxRowBytesLimit) + "], got " +
                                      std::to_string(spec.max_row_bytes));
  }
  if (spec.num_classes < 0) {
    return absl::InvalidArgumentError("csv: num_classes must be >= 0, got " +
                                      std::to_string(spec.num_classes));
  }
  return absl::OkStatus();
}

struct CsvReader::State {
  State(const std::string& path, const CsvSpec& spec)
      : file(path),
        rows([this](char* out, std::size_t size) { return file.ReadUpTo(out, size, "CSV text"); },
             spec.delimiter, spec.max_row_bytes) {}

  std::string Where(const internal::CsvRow& at) const {
    return file.path() + ": line " + std::to_string(at.line);
  }

  internal::GzFile file;
  internal::CsvRowSplitter rows;
  internal::CsvRow row;
  std::size_t header_fields = 0;
  std::vector<std::size_t> fields;  // of the spec's columns, in RecordColumns's order
  std::int64_t index = 0;
};

absl::StatusOr<std::unique_ptr<CsvReader>> CsvReader::Open(const std::string& path,
                                                           const CsvSpec& spec) {
  TAAS_RETURN_IF_ERROR(CheckCsvSpec(spec));
  auto state = std::make_unique<State>(path, spec);
  TAAS_RETURN_IF_ERROR(state->file.Open());
  absl::StatusOr<bool> got = state->rows.Next(state->row);
  if (!got.ok())
    return absl::Status(got.status().code(), path + ": " + std::string(got.status().message()));
  if (!*got) {
    return absl::DataLossError(path + ": empty: a CSV file starts with its header row");
  }
  std::vector<std::string> names;
  for (std::size_t i = 0; i < state->row.size(); ++i) names.emplace_back(state->row.field(i));
  state->header_fields = names.size();
  for (const std::string& column : RecordColumns(spec)) {
    std::size_t found = names.size();
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] != column) continue;
      if (found != names.size()) {
        return absl::DataLossError(path + ": the header names column \"" + column +
                                   "\" twice (columns " + std::to_string(found + 1) + " and " +
                                   std::to_string(i + 1) + "): rename one");
      }
      found = i;
    }
    if (found == names.size()) {
      return absl::DataLossError(path + ": the header has no column \"" + column +
                                 "\" (it has: " + Listed(names) +
                                 "): set the CsvSpec's column names to the file's own");
    }
    state->fields.push_back(found);
  }
  return std::unique_ptr<CsvReader>(new CsvReader(std::move(state)));
}

CsvReader::CsvReader(std::unique_ptr<State> state) : state_(std::move(state)) {}

CsvReader::~CsvReader() = default;

absl::StatusOr<bool> CsvReader::Next(Record& record) {
  State& s = *state_;
  absl::StatusOr<bool> got = s.rows.Next(s.row);
  if (!got.ok()) {
    return absl::Status(got.status().code(),
                        s.file.path() + ": " + std::string(got.status().message()));
  }
  if (!*got) return false;
  if (s.row.size() != s.header_fields) {
    return absl::DataLossError(s.Where(s.row) + ": " + std::to_string(s.row.size()) +
                               " fields, but the header has " + std::to_string(s.header_fields) +
                               ": a ragged row (a missing or extra delimiter, or a field holding "
                               "the delimiter without quotes)");
  }
  EncodeCells(s.row, s.fields, record.bytes);
  record.index = s.index++;
  record.offset = s.row.offset;
  return true;
}

absl::StatusOr<std::shared_ptr<CsvDataset>> CsvDataset::Create(
    const std::vector<std::string>& patterns, const CsvSpec& spec) {
  TAAS_RETURN_IF_ERROR(CheckCsvSpec(spec));
  TAAS_ASSIGN_OR_RETURN(std::vector<std::string> files, MatchFiles(patterns));
  return std::shared_ptr<CsvDataset>(new CsvDataset(std::move(files), spec));
}

CsvDataset::CsvDataset(std::vector<std::string> files, CsvSpec spec)
    : files_(std::move(files)), spec_(std::move(spec)) {}

std::int64_t CsvDataset::num_parts() const { return static_cast<std::int64_t>(files_.size()); }

std::string CsvDataset::part_name(std::int64_t part) const {
  if (part < 0 || part >= num_parts()) return "CSV part " + std::to_string(part);
  return files_[static_cast<std::size_t>(part)];
}

absl::StatusOr<std::unique_ptr<RecordReader>> CsvDataset::Open(std::int64_t part) const {
  if (part < 0 || part >= num_parts()) {
    return absl::OutOfRangeError("CSV files: part " + std::to_string(part) + " is not in [0, " +
                                 std::to_string(num_parts()) + ")");
  }
  TAAS_ASSIGN_OR_RETURN(auto reader,
                        CsvReader::Open(files_[static_cast<std::size_t>(part)], spec_));
  return std::unique_ptr<RecordReader>(std::move(reader));
}

absl::StatusOr<DecodeFn> MakeCsvDecoder(CsvSpec spec) {
  TAAS_RETURN_IF_ERROR(CheckCsvSpec(spec));
  return DecodeFn(CsvDecoder(std::move(spec)));
}

}  // namespace taas::data
