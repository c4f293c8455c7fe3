#include "taas/data/tfrecord.h"

#include <doctest/doctest.h>
#include <sys/resource.h>

#include <cstring>
#include <string>
#include <vector>

#include "taas/crc32c/crc32c.h"
#include "taas/data/file_patterns.h"
#include "test_files.h"

namespace taas::data {
namespace {

using testing::Contains;
using testing::TempDir;
using testing::WriteGz;
using testing::WriteRaw;

std::string Framed(const std::vector<std::string>& records) {
  std::string out;
  for (const std::string& record : records) out += EncodeTfRecord(record);
  return out;
}

// Every record of the file, or the first error.
absl::StatusOr<std::vector<Record>> ReadAll(const std::string& path,
                                            const TfRecordOptions& options = {}) {
  TAAS_ASSIGN_OR_RETURN(auto reader, TfRecordReader::Open(path, options));
  std::vector<Record> records;
  Record record;
  for (;;) {
    TAAS_ASSIGN_OR_RETURN(bool got, reader->Next(record));
    if (!got) return records;
    records.push_back(record);
  }
}

// A record header declaring `length` bytes, with the length's checksum right.
std::string HeaderDeclaring(std::uint64_t length) {
  std::string header(kTfRecordHeaderBytes, '\0');
  std::memcpy(header.data(), &length, 8);
  const std::uint32_t crc = crc32c::Mask(crc32c::Value(header.data(), 8));
  std::memcpy(header.data() + 8, &crc, 4);
  return header;
}

// The most memory this process has held, in MiB.
long PeakMiB() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

TEST_CASE("framing round trip: what EncodeTfRecord frames, the reader reads back") {
  TempDir dir;
  const std::vector<std::string> records = {"", "a", std::string(100000, 'x'),
                                            std::string("\0\1\2", 3)};
  WriteRaw(dir.File("plain.tfrecord"), Framed(records));
  auto read = ReadAll(dir.File("plain.tfrecord"));
  REQUIRE_MESSAGE(read.ok(), read.status().message());
  REQUIRE(read->size() == records.size());
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    CHECK((*read)[i].bytes == records[i]);
    CHECK((*read)[i].index == static_cast<std::int64_t>(i));
    CHECK((*read)[i].offset == offset);
    offset += kTfRecordHeaderBytes + records[i].size() + kTfRecordFooterBytes;
  }
}

TEST_CASE("the framing is TensorFlow's: a known record's bytes") {
  // The masked CRC-32C of the 8-byte length 3 and of "abc", as TensorFlow writes them.
  const std::string framed = EncodeTfRecord("abc");
  REQUIRE(framed.size() == 12 + 3 + 4);
  CHECK(framed.substr(0, 8) == std::string("\3\0\0\0\0\0\0\0", 8));
  auto length = DecodeTfRecordHeader(std::string_view(framed).substr(0, 12), 100);
  REQUIRE(length.ok());
  CHECK(*length == 3);
  CHECK(CheckTfRecordData("abc", std::string_view(framed).substr(15, 4)).ok());
}

TEST_CASE("gzip-compressed files read the same, and compression is checked") {
  TempDir dir;
  const std::vector<std::string> records = {"first", std::string(5000, 'y'), "last"};
  WriteGz(dir.File("records.tfrecord.gz"), Framed(records));
  WriteRaw(dir.File("records.tfrecord"), Framed(records));
  for (TfRecordCompression compression : {TfRecordCompression::kAuto, TfRecordCompression::kGzip}) {
    auto read = ReadAll(dir.File("records.tfrecord.gz"), {compression});
    REQUIRE_MESSAGE(read.ok(), read.status().message());
    REQUIRE(read->size() == 3);
    CHECK((*read)[1].bytes == records[1]);
    CHECK((*read)[2].offset == 12 + 5 + 4 + 12 + 5000 + 4);  // in the decompressed stream
  }
  auto told_plain =
      TfRecordReader::Open(dir.File("records.tfrecord.gz"), {TfRecordCompression::kNone});
  REQUIRE_FALSE(told_plain.ok());
  CHECK(told_plain.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Contains(told_plain.status(), "is gzip-compressed"));
  CHECK(Contains(told_plain.status(), "kGzip or kAuto"));
  auto told_gzip = TfRecordReader::Open(dir.File("records.tfrecord"), {TfRecordCompression::kGzip});
  REQUIRE_FALSE(told_gzip.ok());
  CHECK(Contains(told_gzip.status(), "is not gzip-compressed"));
}

TEST_CASE("a data checksum mismatch names the file, the record and its offset") {
  TempDir dir;
  std::string bytes = Framed({"good", "this one is damaged", "after"});
  const std::size_t second = 12 + 4 + 4;
  bytes[second + 12 + 3] ^= 0x20;  // one bit of the second record's data
  WriteRaw(dir.File("bad-crc.tfrecord"), bytes);
  auto reader = TfRecordReader::Open(dir.File("bad-crc.tfrecord"));
  REQUIRE(reader.ok());
  Record record;
  auto first = (*reader)->Next(record);
  REQUIRE(first.ok());
  CHECK(*first);
  auto damaged = (*reader)->Next(record);
  REQUIRE_FALSE(damaged.ok());
  INFO(damaged.status().message());
  CHECK(damaged.status().code() == absl::StatusCode::kDataLoss);
  CHECK(Contains(damaged.status(), dir.File("bad-crc.tfrecord") + ": record 1 at byte offset " +
                                       std::to_string(second)));
  CHECK(Contains(damaged.status(), "the data's checksum does not match"));
  CHECK(Contains(damaged.status(), "write the file again"));
  // The reader is done after an error: what follows cannot be trusted to be framed.
  auto after = (*reader)->Next(record);
  REQUIRE(after.ok());
  CHECK_FALSE(*after);
}

TEST_CASE("a length checksum mismatch is caught before the length is used") {
  TempDir dir;
  std::string bytes = Framed({"abc"});
  bytes[0] = '\x7f';  // the length, without its checksum
  WriteRaw(dir.File("bad-length.tfrecord"), bytes);
  auto read = ReadAll(dir.File("bad-length.tfrecord"));
  REQUIRE_FALSE(read.ok());
  INFO(read.status().message());
  CHECK(Contains(read.status(), "record 0 at byte offset 0"));
  CHECK(Contains(read.status(), "the length's checksum does not match"));
}

TEST_CASE("a length of 2^60 (checksum and all) is an error, not an allocation") {
  TempDir dir;
  const long before = PeakMiB();
  WriteRaw(dir.File("huge.tfrecord"), HeaderDeclaring(std::uint64_t{1} << 60) + "tiny");
  auto read = ReadAll(dir.File("huge.tfrecord"));
  REQUIRE_FALSE(read.ok());
  INFO(read.status().message());
  CHECK(read.status().code() == absl::StatusCode::kDataLoss);
  CHECK(Contains(read.status(), dir.File("huge.tfrecord") + ": record 0 at byte offset 0"));
  CHECK(Contains(read.status(), "declares a record of 1152921504606846976 bytes"));
  CHECK(Contains(read.status(), "TfRecordOptions::max_record_bytes"));
  // Under a raised limit, a length that lies allocates only what the file holds.
  WriteRaw(dir.File("liar.tfrecord"), HeaderDeclaring(std::uint64_t{900} << 20) + "tiny");
  read = ReadAll(dir.File("liar.tfrecord"), {TfRecordCompression::kAuto, std::uint64_t{1} << 30});
  REQUIRE_FALSE(read.ok());
  CHECK(Contains(read.status(), "declares 943718400 bytes of data"));
  CHECK(Contains(read.status(), "the file ends after 4"));
  CHECK(PeakMiB() - before < 100);
}

TEST_CASE("truncated headers and records name where the file ends") {
  TempDir dir;
  const std::string bytes = Framed({"first", "second record"});
  const std::size_t second = 12 + 5 + 4;
  WriteRaw(dir.File("cut-header.tfrecord"), bytes.substr(0, second + 7));
  auto read = ReadAll(dir.File("cut-header.tfrecord"));
  REQUIRE_FALSE(read.ok());
  INFO(read.status().message());
  CHECK(read.status().code() == absl::StatusCode::kDataLoss);
  CHECK(Contains(read.status(), "record 1 at byte offset " + std::to_string(second)));
  CHECK(
      Contains(read.status(), "truncated: the file ends 7 bytes into the record's 12-byte header"));

  WriteRaw(dir.File("cut-data.tfrecord"), bytes.substr(0, bytes.size() - 6));
  read = ReadAll(dir.File("cut-data.tfrecord"));
  REQUIRE_FALSE(read.ok());
  INFO(read.status().message());
  CHECK(Contains(read.status(), "record 1 at byte offset " + std::to_string(second)));
  CHECK(Contains(read.status(), "declares 13 bytes of data"));
  CHECK(Contains(read.status(), "the file ends after 11"));

  // A gzip stream cut short: zlib's own error, with the record named.
  std::string many;
  for (int i = 0; i < 200; ++i)
    many += EncodeTfRecord(std::string(1000, static_cast<char>('a' + i % 26)));
  WriteGz(dir.File("whole.tfrecord.gz"), many);
  auto whole = testing::ReadRaw(dir.File("whole.tfrecord.gz"));
  whole.resize(whole.size() / 2);
  WriteRaw(dir.File("cut.tfrecord.gz"), whole);
  read = ReadAll(dir.File("cut.tfrecord.gz"));
  REQUIRE_FALSE(read.ok());
  INFO(read.status().message());
  CHECK(Contains(read.status(), dir.File("cut.tfrecord.gz")));
  CHECK(Contains(read.status(), "in record "));
}

TEST_CASE("an empty file holds no records; a missing one is NotFound") {
  TempDir dir;
  WriteRaw(dir.File("empty.tfrecord"), std::string());
  auto read = ReadAll(dir.File("empty.tfrecord"));
  REQUIRE(read.ok());
  CHECK(read->empty());
  auto missing = TfRecordReader::Open(dir.File("missing.tfrecord"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("globs: sorted, each file once, and a pattern matching nothing named") {
  TempDir dir;
  for (const char* name : {"b-1.tfrecord", "a-0.tfrecord", "c-2.tfrecord", "notes.txt"}) {
    WriteRaw(dir.File(name), Framed({name}));
  }
  auto files = MatchFiles({dir.File("*.tfrecord"), dir.File("a-0.tfrecord")});
  REQUIRE(files.ok());
  CHECK(*files == std::vector<std::string>{dir.File("a-0.tfrecord"), dir.File("b-1.tfrecord"),
                                           dir.File("c-2.tfrecord")});
  auto none = MatchFiles({dir.File("*.tfrecord"), dir.File("train-*.tfrecord")});
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == absl::StatusCode::kNotFound);
  CHECK(Contains(none.status(), dir.File("train-*.tfrecord")));
  CHECK_FALSE(MatchFiles({}).ok());

  auto dataset = TfRecordDataset::Create({dir.File("*.tfrecord")});
  REQUIRE(dataset.ok());
  CHECK((*dataset)->num_parts() == 3);
  CHECK((*dataset)->part_name(1) == dir.File("b-1.tfrecord"));
  auto reader = (*dataset)->Open(2);
  REQUIRE(reader.ok());
  Record record;
  REQUIRE(*(*reader)->Next(record));
  CHECK(record.bytes == "c-2.tfrecord");
}

}  // namespace
}  // namespace taas::data
