#include "taas/data/csv.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "csv_rows.h"
#include "taas/data/stream_pipeline.h"
#include "test_files.h"
#include "test_read.h"

namespace taas::data {
namespace {

using internal::CsvRow;
using internal::CsvRowSplitter;
using testing::Contains;
using testing::TempDir;
using testing::WriteGz;
using testing::WriteRaw;

// A source over `text`, giving at most `piece` bytes per read (1: every byte a read of its own).
internal::ByteSource StringSource(std::string text, std::size_t piece = 1 << 20) {
  auto at = std::make_shared<std::size_t>(0);
  return [text = std::move(text), piece, at](char* out, std::size_t size) {
    const std::size_t n = std::min({size, piece, text.size() - *at});
    std::copy_n(text.data() + *at, n, out);
    *at += n;
    return absl::StatusOr<std::size_t>(n);
  };
}

struct SplitRow {
  std::vector<std::string> fields;
  std::int64_t line;
  std::uint64_t offset;
  bool operator==(const SplitRow&) const = default;
};

// Every row of `text`, or the first error.
absl::StatusOr<std::vector<SplitRow>> Split(std::string text, std::size_t piece = 1 << 20,
                                            char delimiter = ',', std::size_t max_row = 1 << 20) {
  CsvRowSplitter splitter(StringSource(std::move(text), piece), delimiter, max_row);
  std::vector<SplitRow> rows;
  CsvRow row;
  for (;;) {
    TAAS_ASSIGN_OR_RETURN(bool got, splitter.Next(row));
    if (!got) return rows;
    SplitRow split{{}, row.line, row.offset};
    for (std::size_t i = 0; i < row.size(); ++i) split.fields.emplace_back(row.field(i));
    rows.push_back(split);
  }
}

TEST_CASE("rows: RFC 4180 fields, any line ends, blank lines, a byte order mark, any read size") {
  const std::string text =
      "\xEF\xBB\xBF"
      "a,b,c\r\n"
      "1,\"x, \"\"quoted\"\"\",\r\n"
      "\n"
      "\"two\nlines\",,\"\"\r"
      "last,row,no-newline";
  const std::vector<SplitRow> expected = {
      {{"a", "b", "c"}, 1, 3},
      {{"1", "x, \"quoted\"", ""}, 2, 10},
      {{"two\nlines", "", ""}, 4, 31},
      {{"last", "row", "no-newline"}, 6, 47},
  };
  for (std::size_t piece : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{1 << 20}}) {
    CAPTURE(piece);
    auto rows = Split(text, piece);
    REQUIRE_MESSAGE(rows.ok(), rows.status().message());
    CHECK(*rows == expected);
  }
  auto semicolons = Split("a;\"b;c\"\n", 1 << 20, ';');
  REQUIRE(semicolons.ok());
  CHECK((*semicolons)[0].fields == std::vector<std::string>{"a", "b;c"});
  // A mark cut short is text; an empty input and blank lines hold no rows.
  auto partial = Split("\xEF\xBBx\n");
  REQUIRE(partial.ok());
  CHECK((*partial)[0].fields == std::vector<std::string>{"\xEF\xBBx"});
  CHECK(Split("")->empty());
  CHECK(Split("\r\n\n\r")->empty());
}

TEST_CASE("rows: stray and unclosed quotes are errors naming the line and field") {
  auto stray = Split("a,b\n1,2\"3\n");
  REQUIRE_FALSE(stray.ok());
  CHECK(Contains(stray.status(), "line 2, field 2: a quote inside an unquoted field"));
  auto after = Split("a,b\n\"1\"x,2\n");
  REQUIRE_FALSE(after.ok());
  CHECK(Contains(after.status(), "line 2, field 1: text after a quoted field's closing quote"));
  auto unclosed = Split("a,b\n1,\"open\n\n\n");
  REQUIRE_FALSE(unclosed.ok());
  CHECK(Contains(unclosed.status(), "the file ends inside the quoted field opened on line 2"));
}

TEST_CASE("rows: a 1 GiB line is an error at max_row_bytes, not an allocation") {
  constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
  auto served = std::make_shared<std::uint64_t>(0);
  internal::ByteSource endless_line = [served](char* out, std::size_t size) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(size, kGiB - *served));
    std::fill_n(out, n, 'x');
    *served += n;
    return absl::StatusOr<std::size_t>(n);
  };
  CsvRowSplitter splitter(endless_line, ',', 1 << 20);
  CsvRow row;
  auto got = splitter.Next(row);
  REQUIRE_FALSE(got.ok());
  CHECK(Contains(got.status(), "line 1, field 1: the row is longer than the limit of 1048576"));
  CHECK(*served < (2u << 20));  // read the limit and a buffer, not the line
  CHECK(row.text.capacity() <= (2u << 20));
  CHECK_FALSE(*splitter.Next(row));  // done after the error
}

// The spec of the Python fixtures: x and y in, the class label out, an empty x as 7.
CsvSpec FixtureSpec() {
  CsvSpec spec;
  spec.feature_columns = {"x", "y"};
  spec.label_column = "label";
  spec.num_classes = 3;
  spec.missing_value = 7.0f;
  return spec;
}

// Every example of the files through a one-thread stream, in order, or the first error.
absl::StatusOr<std::vector<DecodedExample>> ReadExamples(const std::vector<std::string>& patterns,
                                                         const CsvSpec& spec) {
  TAAS_ASSIGN_OR_RETURN(auto dataset, CsvDataset::Create(patterns, spec));
  TAAS_ASSIGN_OR_RETURN(DecodeFn decode, MakeCsvDecoder(spec));
  return testing::ReadAllExamples(*dataset, decode);
}

TEST_CASE("files written by Python's csv module read back exactly (both dialects, and gzip)") {
  const std::string dir = TAAS_DATA_TESTDATA;
  // The values testdata/make_csv_fixture.py states: x = X[i] (row 2 empty: the default 7),
  // y = -0.5 i, label = i % 3.
  const std::vector<std::vector<float>> inputs = {
      {1.5f, -0.0f}, {1e-3f, -0.5f}, {7.0f, -1.0f}, {-2.25e10f, -1.5f}};
  TempDir tmp;
  WriteGz(tmp.File("minimal.csv.gz"), testing::ReadRaw(dir + "/python_minimal.csv"));
  for (const auto& [file, delimiter] :
       std::vector<std::pair<std::string, char>>{{dir + "/python_minimal.csv", ','},
                                                 {dir + "/python_semicolon.csv", ';'},
                                                 {tmp.File("minimal.csv.gz"), ','}}) {
    const std::string path = file;  // (clang 14 refuses to capture a structured binding)
    CAPTURE(path);
    CsvSpec spec = FixtureSpec();
    spec.delimiter = delimiter;
    auto examples = ReadExamples({file}, spec);
    REQUIRE_MESSAGE(examples.ok(), examples.status().message());
    REQUIRE(examples->size() == 4);
    for (std::size_t i = 0; i < 4; ++i) {
      CHECK((*examples)[i].input == inputs[i]);
      CHECK((*examples)[i].label == static_cast<std::int32_t>(i % 3));
      CHECK((*examples)[i].target.empty());
    }
    // The quoted free text is a column like any other: the splitter gives it back exactly.
    const std::vector<char> minimal = testing::ReadRaw(dir + "/python_minimal.csv");
    CsvRowSplitter rows(StringSource(std::string(minimal.begin(), minimal.end())), ',', 1 << 20);
    CsvRow row;
    std::vector<std::string> notes;
    while (*rows.Next(row)) notes.emplace_back(row.field(1));
    CHECK(notes == std::vector<std::string>{"note, free text", "plain", "a, comma",
                                            "say \"hi\"\nthen go", "caf\u00e9 \u2615"});
  }
  // y as a float target: one float per example, for StreamOptions::target_elements = 1.
  CsvSpec regression = FixtureSpec();
  regression.feature_columns = {"id"};
  regression.label_column = "y";
  regression.label_kind = LabelKind::kFloatTarget;
  auto targets = ReadExamples({dir + "/python_minimal.csv"}, regression);
  REQUIRE_MESSAGE(targets.ok(), targets.status().message());
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK((*targets)[i].input == std::vector<float>{static_cast<float>(i)});
    CHECK((*targets)[i].target == std::vector<float>{-0.5f * static_cast<float>(i)});
  }
}

TEST_CASE("hostile files: each error names the file, the line and the column") {
  TempDir dir;
  const CsvSpec spec = FixtureSpec();
  const auto error_of = [&](const std::string& name, const std::string& text,
                            const CsvSpec& with = FixtureSpec()) {
    WriteRaw(dir.File(name), text);
    auto examples = ReadExamples({dir.File(name)}, with);
    REQUIRE_FALSE(examples.ok());
    return examples.status();
  };
  CHECK(
      Contains(error_of("ragged.csv", "x,y,label\n1,2,0\n1,2\n"),
               dir.File("ragged.csv") + ": line 3: 2 fields, but the header has 3: a ragged row"));
  CHECK(Contains(error_of("word.csv", "x,y,label\n1,2,0\n1,abc,0\n"),
                 dir.File("word.csv") + ": line 3, column \"y\": \"abc\" is not a number"));
  CsvSpec strict = FixtureSpec();
  strict.missing_value.reset();
  CHECK(Contains(error_of("missing.csv", "x,y,label\n1,2,0\n\"\",2,0\n", strict),
                 dir.File("missing.csv") +
                     ": line 3, column \"x\": the cell is empty (a missing value): set "
                     "CsvSpec::missing_value"));
  CHECK(Contains(error_of("nan.csv", "x,y,label\nnan,2,0\n"), "\"nan\" is not a finite number"));
  CHECK(Contains(error_of("huge.csv", "x,y,label\n1e999,2,0\n"), "\"1e999\" is out of range"));
  CHECK(Contains(error_of("class.csv", "x,y,label\n1,2,3\n"),
                 "line 2, column \"label\": class 3 is not in [0, 3) (CsvSpec::num_classes)"));
  CHECK(Contains(error_of("fraction.csv", "x,y,label\n1,2,1.5\n"),
                 "\"1.5\" is not a number (a class index)"));
  CHECK(Contains(error_of("nolabel.csv", "x,y,label\n1,2, \n"), "the label is empty"));
  CHECK(
      Contains(error_of("column.csv", "x,z,label\n1,2,0\n"),
               dir.File("column.csv") + ": the header has no column \"y\" (it has: x, z, label)"));
  CHECK(Contains(error_of("twice.csv", "x,y,x,label\n1,2,3,0\n"),
                 "the header names column \"x\" twice (columns 1 and 3)"));
  CHECK(Contains(error_of("empty.csv", ""), dir.File("empty.csv") + ": empty"));
  CHECK(Contains(error_of("quote.csv", "x,y,label\n1,\"2,0\n"),
                 dir.File("quote.csv") +
                     ": line 3, field 2: the file ends inside the quoted field opened on line 2"));
  CsvSpec small = FixtureSpec();
  small.max_row_bytes = 16;
  CHECK(
      Contains(error_of("long.csv", "x,y,label\n" + std::string(100, '1') + ",2,0\n", small),
               dir.File("long.csv") + ": line 2, field 1: the row is longer than the limit of 16"));
  // Accepted spellings: spaces around a number, a sign, an exponent.
  WriteRaw(dir.File("spaces.csv"), std::string("x,y,label\n +1.5 ,\t-2e-1,2\n"));
  auto spaced = ReadExamples({dir.File("spaces.csv")}, spec);
  REQUIRE_MESSAGE(spaced.ok(), spaced.status().message());
  CHECK((*spaced)[0].input == std::vector<float>{1.5f, -0.2f});
  // A record from elsewhere is refused, not misread.
  auto decode = MakeCsvDecoder(spec);
  REQUIRE(decode.ok());
  for (const std::string& record :
       {std::string(), std::string(12, '\xff'), std::string(40, '\0')}) {
    CHECK(Contains((*decode)(record).status(), "not a CSV record"));
  }
}

TEST_CASE("specs are checked by field") {
  CsvSpec spec = FixtureSpec();
  spec.feature_columns.clear();
  CHECK(Contains(CheckCsvSpec(spec), "feature_columns is empty"));
  spec = FixtureSpec();
  spec.label_column = "x";
  CHECK(Contains(CheckCsvSpec(spec), "column \"x\" is named twice"));
  spec = FixtureSpec();
  spec.delimiter = '"';
  CHECK(Contains(CheckCsvSpec(spec), "delimiter"));
  spec = FixtureSpec();
  spec.max_row_bytes = 0;
  CHECK(Contains(CheckCsvSpec(spec), "max_row_bytes"));
  CHECK(Contains(MakeCsvDecoder(spec).status(), "max_row_bytes"));
  CHECK(Contains(CsvDataset::Create({"/nonexistent/*.csv"}, FixtureSpec()).status(),
                 "/nonexistent/*.csv"));
}

// The ids (the "id" column) each of `num_shards` streams reads, over `files`.
std::vector<std::vector<int>> ShardIds(const std::string& pattern, int num_shards) {
  CsvSpec spec;
  spec.feature_columns = {"id"};
  spec.label_column = "label";
  auto dataset = CsvDataset::Create({pattern}, spec);
  REQUIRE(dataset.ok());
  std::vector<std::vector<int>> shards;
  for (int shard = 0; shard < num_shards; ++shard) {
    StreamOptions options;
    options.batch_size = 4;
    options.example_shape = {1};
    options.shuffle_buffer = 8;
    options.seed = 5;
    options.num_shards = num_shards;
    options.shard_index = shard;
    options.decode_threads = 2;
    auto stream = StreamPipeline::Create(*dataset, *MakeCsvDecoder(spec), options);
    REQUIRE_MESSAGE(stream.ok(), stream.status().message());
    auto ids = testing::FirstFeatures(**stream);
    REQUIRE_MESSAGE(ids.ok(), ids.status().message());
    shards.push_back(*ids);
  }
  return shards;
}

TEST_CASE("sharding by file and by record: disjoint, covering, the same every run") {
  TempDir dir;
  // 3 files of 10 rows, ids 0..29, the columns in another order in the last file.
  for (int file = 0; file < 3; ++file) {
    std::string text = file == 2 ? "label,id\n" : "id,label\n";
    for (int i = 0; i < 10; ++i) {
      const std::string id = std::to_string(file * 10 + i);
      text += file == 2 ? "1," + id + "\n" : id + ",1\n";
    }
    WriteRaw(dir.File("part-" + std::to_string(file) + ".csv"), text);
  }
  for (int num_shards : {1, 2, 3, 4, 7}) {  // by file up to 3 shards, by record above
    CAPTURE(num_shards);
    const auto shards = ShardIds(dir.File("part-*.csv"), num_shards);
    CHECK(shards == ShardIds(dir.File("part-*.csv"), num_shards));
    std::multiset<int> all;
    for (const auto& shard : shards) all.insert(shard.begin(), shard.end());
    std::multiset<int> expected;
    for (int id = 0; id < 30; ++id) expected.insert(id);
    CHECK(all == expected);
  }
}

}  // namespace
}  // namespace taas::data
