// CSV files (RFC 4180, as Python's csv module and pandas write them), streamed a row at a time: a
// header row naming the columns, numeric columns chosen by name as the model's input, and one
// label column, a class index or a float target. A file may be gzip-compressed (told from its
// first bytes). Each file is a part, so sharding is by file when there are enough files, else by
// row (records.h).
//
//   data::CsvSpec spec;
//   spec.feature_columns = {"age", "income", "rooms"};  // the input, example_shape {3}
//   spec.label_column = "price";
//   spec.label_kind = data::LabelKind::kFloatTarget;     // StreamOptions::target_elements = 1
//   spec.missing_value = 0.0f;                           // else an empty cell is an error
//   TAAS_ASSIGN_OR_RETURN(auto files, data::CsvDataset::Create({"/data/train-*.csv"}, spec));
//   TAAS_ASSIGN_OR_RETURN(data::DecodeFn decode, data::MakeCsvDecoder(spec));
//
// The reader splits rows into fields and keeps the cells the spec names; the decode step, on the
// pipeline's decode threads, reads them as numbers. The text is untrusted: a row longer than
// max_row_bytes, a ragged row, a stray quote, an empty or non-numeric cell is an error naming the
// file, the line and the column, never a crash or an allocation of what the file claims.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/data/records.h"

namespace taas::data {

struct CsvSpec {
  // The input's columns, in the order the model sees them (example_shape {size()}).
  std::vector<std::string> feature_columns;
  std::string label_column;
  LabelKind label_kind = LabelKind::kClass;  // kFloatTarget: StreamOptions::target_elements = 1
  std::int64_t num_classes = 0;              // > 0: a class outside [0, num_classes) is an error
  // What an empty feature cell reads as; unset, an empty cell is an error naming the file, the
  // line and the column. A label is never missing.
  std::optional<float> missing_value;
  char delimiter = ',';
  // The longest row (line breaks inside quoted fields included): a longer one is an error, so a
  // file without line breaks costs this much memory at most.
  std::size_t max_row_bytes = std::size_t{1} << 20;
};

// InvalidArgument naming the field: no feature columns, no label column, a column named twice
// (the label among the features included), a quote or line break as the delimiter, a
// max_row_bytes of 0 or over 1 GiB, a negative num_classes.
absl::Status CheckCsvSpec(const CsvSpec& spec);

// Reads one CSV file's rows as records of the cells the spec names (MakeCsvDecoder reads them);
// a record's index is its row among the data rows (from 0), its offset the row's first byte.
class CsvReader : public RecordReader {
 public:
  // NotFound for a file that cannot be opened; DataLoss naming the file for a file without a
  // header row, or a header without a column the spec names (listing those it has) or naming
  // one twice; CheckCsvSpec's errors.
  static absl::StatusOr<std::unique_ptr<CsvReader>> Open(const std::string& path,
                                                         const CsvSpec& spec);
  ~CsvReader() override;

  // DataLoss naming the file and the line for a row of another field count than the header's, a
  // row over max_row_bytes, a stray or unclosed quote, corrupt gzip data.
  absl::StatusOr<bool> Next(Record& record) override;

 private:
  struct State;
  explicit CsvReader(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// CSV files, one part each, from globs (file_patterns.h). Every file has its own header, so the
// columns may be in another order in each.
class CsvDataset : public RecordDataset {
 public:
  // CheckCsvSpec's and MatchFiles's errors. The files are opened when read, not here.
  static absl::StatusOr<std::shared_ptr<CsvDataset>> Create(
      const std::vector<std::string>& patterns, const CsvSpec& spec);

  std::int64_t num_parts() const override;
  std::string part_name(std::int64_t part) const override;  // the file's path
  absl::StatusOr<std::unique_ptr<RecordReader>> Open(std::int64_t part) const override;
  const std::vector<std::string>& files() const { return files_; }

 private:
  CsvDataset(std::vector<std::string> files, CsvSpec spec);

  std::vector<std::string> files_;
  CsvSpec spec_;
};

// The decode step for a CsvDataset's records: the feature cells as floats (an optional sign,
// digits, a decimal point, an exponent; spaces around them ignored), the label as an integer
// class or a float target. Errors (DataLoss) name the line and the column: an empty cell without
// a missing_value, a cell that is not a finite number, a class that is not an integer or is out
// of range, a record that is not a CsvReader's. CheckCsvSpec's errors.
absl::StatusOr<DecodeFn> MakeCsvDecoder(CsvSpec spec);

}  // namespace taas::data
