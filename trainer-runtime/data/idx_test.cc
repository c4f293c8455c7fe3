#include "taas/data/idx.h"

#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace taas::data {
namespace {

struct TempDir {
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "taas-idx-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string File(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

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

void WriteGz(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  gzclose(f);
}

std::vector<char> ReadRaw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteRaw(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool Contains(const absl::Status& status, const std::string& text) {
  return std::string(status.message()).find(text) != std::string::npos;
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
