#include "taas/data/idx.h"

#include <doctest/doctest.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "test_files.h"

namespace taas::data {
namespace {

using testing::Contains;
using testing::ReadRaw;
using testing::TempDir;
using testing::WriteGz;
using testing::WriteRaw;

void Put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
}

std::vector<std::uint8_t> ImagesFile(std::uint32_t count, std::uint32_t rows, std::uint32_t cols) {
  std::vector<std::uint8_t> bytes;
  Put32(bytes, 0x803);
  Put32(bytes, count);
  Put32(bytes, rows);
  Put32(bytes, cols);
  for (std::uint32_t i = 0; i < count * rows * cols; ++i)
    bytes.push_back(static_cast<std::uint8_t>(i));
  return bytes;
}

TEST_CASE("reads gzip and plain IDX images and labels") {
  TempDir dir;
  WriteGz(dir.File("images.gz"), ImagesFile(3, 2, 2));
  auto images = ReadIdxImages(dir.File("images.gz"));
  REQUIRE(images.ok());
  CHECK(images->count == 3);
  CHECK(images->rows == 2);
  REQUIRE(images->pixels.size() == 12);
  CHECK(images->pixels[11] == 11);

  std::vector<std::uint8_t> labels;
  Put32(labels, 0x801);
  Put32(labels, 3);
  labels.insert(labels.end(), {7, 8, 9});
  WriteRaw(dir.File("labels"), std::vector<char>(labels.begin(), labels.end()));
  auto read = ReadIdxLabels(dir.File("labels"));
  REQUIRE(read.ok());
  CHECK(*read == std::vector<std::uint8_t>{7, 8, 9});
}

TEST_CASE("truncated data names the file and the offset") {
  TempDir dir;
  auto bytes = ImagesFile(3, 2, 2);
  bytes.resize(bytes.size() - 5);  // 16 header bytes + 7 of 12 pixels
  WriteGz(dir.File("short.gz"), bytes);
  auto images = ReadIdxImages(dir.File("short.gz"));
  REQUIRE_FALSE(images.ok());
  INFO(images.status().message());
  CHECK(images.status().code() == absl::StatusCode::kDataLoss);
  CHECK(Contains(images.status(), dir.File("short.gz")));
  CHECK(Contains(images.status(), "truncated at byte offset 23"));
}

TEST_CASE("a cut-off gzip stream and a corrupt one are errors, not short reads") {
  TempDir dir;
  WriteGz(dir.File("full.gz"), ImagesFile(50, 28, 28));
  auto raw = ReadRaw(dir.File("full.gz"));

  auto cut = raw;
  cut.resize(raw.size() / 2);
  WriteRaw(dir.File("cut.gz"), cut);
  auto images = ReadIdxImages(dir.File("cut.gz"));
  REQUIRE_FALSE(images.ok());
  INFO(images.status().message());
  CHECK(Contains(images.status(), dir.File("cut.gz")));
  CHECK(Contains(images.status(), "byte offset"));

  auto corrupt = raw;
  for (std::size_t i = 20; i < 60; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  WriteRaw(dir.File("corrupt.gz"), corrupt);
  images = ReadIdxImages(dir.File("corrupt.gz"));
  REQUIRE_FALSE(images.ok());
  INFO(images.status().message());
  CHECK(Contains(images.status(), dir.File("corrupt.gz")));
  CHECK(Contains(images.status(), "byte offset"));
}

TEST_CASE("bad magic, implausible header and missing files") {
  TempDir dir;
  auto labels_as_images = ImagesFile(1, 1, 1);
  labels_as_images[3] = 0x01;
  WriteGz(dir.File("magic.gz"), labels_as_images);
  auto images = ReadIdxImages(dir.File("magic.gz"));
  REQUIRE_FALSE(images.ok());
  CHECK(Contains(images.status(), "bad IDX magic number at byte offset 0"));

  auto huge = ImagesFile(0, 0, 0);
  huge[8] = 0x7f;  // rows = 0x7f000000
  WriteGz(dir.File("huge.gz"), huge);
  images = ReadIdxImages(dir.File("huge.gz"));
  REQUIRE_FALSE(images.ok());
  CHECK(Contains(images.status(), "row count"));
  CHECK(Contains(images.status(), "byte offset 8"));

  auto missing = ReadIdxLabels(dir.File("nope.gz"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(Contains(missing.status(), dir.File("nope.gz")));
}

// The most memory this process has held, in MiB.
long PeakMiB() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

TEST_CASE("a header declaring more than the file holds allocates only what arrived") {
  TempDir dir;
  // 400000 images of 28 x 28 declared (313 MiB, under the limit), 12 bytes present.
  auto bytes = ImagesFile(0, 28, 28);
  bytes[4] = 0x00;
  bytes[5] = 0x06;
  bytes[6] = 0x1a;
  bytes[7] = 0x80;
  bytes.insert(bytes.end(), 12, 0);
  WriteGz(dir.File("liar.gz"), bytes);
  const long before = PeakMiB();
  auto images = ReadIdxImages(dir.File("liar.gz"));
  REQUIRE_FALSE(images.ok());
  INFO(images.status().message());
  CHECK(Contains(images.status(), "truncated at byte offset 28"));
  CHECK(Contains(images.status(), "declares 313600000 bytes"));
  CHECK(PeakMiB() - before < 100);

  std::vector<std::uint8_t> labels;
  Put32(labels, 0x801);
  Put32(labels, 100'000'000);
  WriteGz(dir.File("labels.gz"), labels);
  auto read = ReadIdxLabels(dir.File("labels.gz"));
  REQUIRE_FALSE(read.ok());
  CHECK(Contains(read.status(), "truncated at byte offset 8"));
  CHECK(PeakMiB() - before < 100);
}

TEST_CASE("sizes beyond the configured maximum are refused before reading") {
  TempDir dir;
  WriteGz(dir.File("images.gz"), ImagesFile(3, 2, 2));
  auto images = ReadIdxImages(dir.File("images.gz"), IdxLimits{11});
  REQUIRE_FALSE(images.ok());
  CHECK(Contains(images.status(), "declares 12 bytes of data, more than the limit of 11"));
  CHECK(ReadIdxImages(dir.File("images.gz"), IdxLimits{12}).ok());

  // The largest header the plausibility checks pass: 1e8 x 65536 x 65536, no overflow.
  auto huge = ImagesFile(0, 0, 0);
  for (auto [at, value] : {std::pair{4, 100'000'000u}, {8, 65'536u}, {12, 65'536u}}) {
    for (int k = 0; k < 4; ++k) huge[at + k] = static_cast<std::uint8_t>(value >> (24 - 8 * k));
  }
  WriteGz(dir.File("huge.gz"), huge);
  images = ReadIdxImages(dir.File("huge.gz"));
  REQUIRE_FALSE(images.ok());
  CHECK(Contains(images.status(), "declares 429496729600000000 bytes"));
}

TEST_CASE("labels outside the model's classes name the file and the example") {
  ImageDataset dataset;
  dataset.labels = {0, 9, 10, 3};
  dataset.labels_path = "/data/train-labels-idx1-ubyte.gz";
  absl::Status s = CheckLabels(dataset, 10);
  CHECK(s.code() == absl::StatusCode::kDataLoss);
  CHECK(s.message() ==
        "/data/train-labels-idx1-ubyte.gz: label 10 of example 2 is outside [0, 10) (the model's "
        "classes)");
  CHECK(CheckLabels(dataset, 11).ok());
}

TEST_CASE("loads the real Fashion-MNIST splits") {
  auto test = LoadMnistSplit(kFashionMnistDir, "test");
  REQUIRE_MESSAGE(test.ok(), test.status().message());
  CHECK(test->count == 10000);
  CHECK(test->rows == 28);
  CHECK(test->cols == 28);
  CHECK(test->pixels.size() == 10000u * 784u);
  int histogram[10] = {};
  for (auto label : test->labels) {
    REQUIRE(label < 10);
    ++histogram[label];
  }
  for (int count : histogram) CHECK(count == 1000);
  CHECK_FALSE(LoadMnistSplit(kFashionMnistDir, "validation").ok());
}

}  // namespace
}  // namespace taas::data
