#include "taas/summary/event_writer.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace taas::summary {
namespace {

namespace fs = std::filesystem;

TEST_CASE("events round-trip through TFRecord framing with checksums") {
  std::string tmpl = (fs::temp_directory_path() / "taas-events-XXXXXX").string();
  fs::path dir = ::mkdtemp(tmpl.data());
  std::string path;
  {
    auto writer = EventWriter::Create((dir / "eval").string());
    REQUIRE(writer.ok());
    path = (*writer)->path();
    CHECK(fs::path(path).filename().string().rfind("events.out.tfevents.", 0) == 0);
    REQUIRE((*writer)->WriteSummary(10, {{"loss", 1.5f}, {"learning_rate", 0.1f}}).ok());
    REQUIRE((*writer)->WriteSummary(20, {{"loss", 0.75f}}).ok());
  }
  auto events = ReadEventFile(path);
  REQUIRE(events.ok());
  REQUIRE(events->size() == 3);
  CHECK((*events)[0].file_version == "brain.Event:2");
  CHECK((*events)[1].step == 10);
  CHECK((*events)[1].scalars == Scalars{{"loss", 1.5f}, {"learning_rate", 0.1f}});
  CHECK((*events)[2].step == 20);

  {  // Flip one byte of the last record's payload: the reader must notice.
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-6, std::ios::end);
    f.put('\x55');
  }
  auto corrupt = ReadEventFile(path);
  CHECK(corrupt.status().code() == absl::StatusCode::kDataLoss);
  fs::remove_all(dir);
}

TEST_CASE("histograms: equal-width buckets between min and max, read back as written") {
  const std::vector<float> values = {1, 2, 3, 4};
  const Histogram h = Histogram::Of(values, 3);
  CHECK(h.min == 1);
  CHECK(h.max == 4);
  CHECK(h.num == 4);
  CHECK(h.sum == 10);
  CHECK(h.sum_squares == 30);
  CHECK(h.bucket_limit == std::vector<double>{2, 3, 4});
  CHECK(h.bucket == std::vector<double>{1, 1, 2});  // the max falls into the last bucket
  const std::vector<float> same = {5, 5};
  CHECK(Histogram::Of(same).bucket_limit == std::vector<double>{5});
  CHECK(Histogram::Of(same).bucket == std::vector<double>{2});
  CHECK(Histogram::Of(std::span<const float>()).bucket.empty());

  std::string tmpl = (fs::temp_directory_path() / "taas-events-XXXXXX").string();
  fs::path dir = ::mkdtemp(tmpl.data());
  std::string path;
  {
    auto writer = EventWriter::Create(dir.string());
    REQUIRE(writer.ok());
    path = (*writer)->path();
    REQUIRE((*writer)->WriteSummary(7, {}, {{"w", h}}).ok());
  }
  auto events = ReadEventFile(path);
  REQUIRE(events.ok());
  REQUIRE(events->size() == 2);
  CHECK((*events)[1].step == 7);
  REQUIRE((*events)[1].histograms.size() == 1);
  const auto& [tag, read] = (*events)[1].histograms[0];
  CHECK(tag == "w");
  CHECK(read.bucket_limit == h.bucket_limit);
  CHECK(read.bucket == h.bucket);
  CHECK(read.sum_squares == 30);
  CHECK((*events)[1].scalars.empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace taas::summary
