#include "taas/checkpoint/checkpoint.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace taas::checkpoint {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "taas-ckpt-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

std::vector<Entry> Entries(float base) {
  return {{"w", {base, base + 1, base + 2}}, {"w/slot_0", {0.5f}}, {"b", {}}};
}

TEST_CASE("save then load returns the same values and step") {
  TempDir dir;
  auto prefix = Save(dir.path, 42, Entries(1), 3);
  REQUIRE(prefix.ok());
  CHECK(*prefix == (dir.path / "model.ckpt-42").string());
  CHECK(fs::exists(dir.path / "model.ckpt-42.index"));
  CHECK(fs::exists(dir.path / "model.ckpt-42.data"));
  CHECK(LatestStep(dir.path) == 42);
  auto loaded = Load(*prefix);
  REQUIRE(loaded.ok());
  CHECK(loaded->global_step == 42);
  REQUIRE(loaded->Find("w") != nullptr);
  CHECK(loaded->Find("w")->values == std::vector<float>{1, 2, 3});
  CHECK(loaded->Find("w/slot_0")->values == std::vector<float>{0.5f});
  CHECK(loaded->Find("b")->values.empty());
  CHECK(loaded->Find("missing") == nullptr);
}

TEST_CASE("keeps only the newest K and names the latest in the checkpoint file") {
  TempDir dir;
  for (int step = 10; step <= 50; step += 10) REQUIRE(Save(dir.path, step, Entries(step), 2).ok());
  auto all = ListCheckpoints(dir.path);
  REQUIRE(all.size() == 2);
  CHECK(all[0] == (dir.path / "model.ckpt-40").string());
  CHECK(all[1] == (dir.path / "model.ckpt-50").string());
  CHECK_FALSE(fs::exists(dir.path / "model.ckpt-30.data"));
  CHECK_FALSE(fs::exists(dir.path / "model.ckpt-10.index"));
  std::ifstream in(dir.path / "checkpoint");
  std::string first;
  std::getline(in, first);
  CHECK(first == "model_checkpoint_path: \"model.ckpt-50\"");
  for (const auto& entry : fs::directory_iterator(dir.path)) {
    CHECK(entry.path().extension() != ".tmp");  // nothing half-written left behind
  }
}

TEST_CASE("a corrupt latest checkpoint is detected and the previous one is used") {
  TempDir dir;
  REQUIRE(Save(dir.path, 1, Entries(1), 5).ok());
  REQUIRE(Save(dir.path, 2, Entries(2), 5).ok());
  {
    std::fstream data(dir.path / "model.ckpt-2.data",
                      std::ios::in | std::ios::out | std::ios::binary);
    data.seekp(4);
    data.put('\x7f');
  }
  auto bad = Load((dir.path / "model.ckpt-2").string());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kDataLoss);
  CHECK(std::string(bad.status().message()).find("checksum mismatch in w") != std::string::npos);
  std::vector<std::string> skipped;
  auto latest = LoadLatest(dir.path, &skipped);
  REQUIRE(latest.ok());
  REQUIRE(latest->has_value());
  CHECK((*latest)->global_step == 1);
  CHECK(skipped.size() == 1);

  fs::resize_file(dir.path / "model.ckpt-1.data", 3);
  auto truncated = Load((dir.path / "model.ckpt-1").string());
  CHECK(truncated.status().code() == absl::StatusCode::kDataLoss);
}

TEST_CASE("an interrupted save leaves the previous checkpoint as the latest") {
  TempDir dir;
  REQUIRE(Save(dir.path, 7, Entries(7), 5).ok());
  // A crash after the data file but before the index: only a .tmp or an orphan data file exists.
  std::ofstream(dir.path / "model.ckpt-8.data.tmp") << "partial";
  std::ofstream(dir.path / "model.ckpt-8.data") << "orphan";
  CHECK(LatestStep(dir.path) == 7);
  auto latest = LoadLatest(dir.path, nullptr);
  REQUIRE(latest.ok());
  CHECK((*latest)->global_step == 7);
}

TEST_CASE("an empty dir has no checkpoint") {
  TempDir dir;
  CHECK_FALSE(LatestStep(dir.path).has_value());
  auto latest = LoadLatest(dir.path, nullptr);
  REQUIRE(latest.ok());
  CHECK_FALSE(latest->has_value());
}

}  // namespace
}  // namespace taas::checkpoint
