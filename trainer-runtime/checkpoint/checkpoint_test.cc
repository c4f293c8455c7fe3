#include "taas/checkpoint/checkpoint.h"

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

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

TEST_CASE("every checkpoint corrupt is an error, not a fresh start") {
  TempDir dir;
  REQUIRE(Save(dir.path, 3, Entries(3), 5).ok());
  fs::resize_file(dir.path / "model.ckpt-3.data", 5);
  std::vector<std::string> skipped;
  auto latest = LoadLatest(dir.path, &skipped);
  REQUIRE_FALSE(latest.ok());
  CHECK(latest.status().code() == absl::StatusCode::kDataLoss);
  CHECK(std::string(latest.status().message()).find("none of its 1 checkpoints verifies") !=
        std::string::npos);
  CHECK(skipped.size() == 1);
}

// Writes `index` as the index of the checkpoint at `prefix`.
void WriteIndex(const fs::path& prefix, const nlohmann::json& index) {
  std::ofstream(prefix.string() + ".index") << index.dump();
}

// Loads after `edit` changed the saved index; the error's message.
std::string LoadError(const std::function<void(nlohmann::json&)>& edit) {
  TempDir dir;
  auto prefix = Save(dir.path, 5, Entries(5), 5);
  REQUIRE(prefix.ok());
  nlohmann::json index;
  std::ifstream(*prefix + ".index") >> index;
  edit(index);
  WriteIndex(*prefix, index);
  auto loaded = Load(*prefix);
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().code() == absl::StatusCode::kDataLoss);
  return std::string(loaded.status().message());
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("an entry's shape is kept when given, absent when not, and checked against its count") {
  TempDir dir;
  auto prefix =
      Save(dir.path, 7,
           {{"w", std::vector<float>(6, 1.0f), std::vector<std::int64_t>{2, 3}}, {"b", {1.0f}}}, 5);
  REQUIRE(prefix.ok());
  auto loaded = Load(*prefix);
  REQUIRE(loaded.ok());
  REQUIRE(loaded->Find("w")->shape.has_value());
  CHECK(*loaded->Find("w")->shape == std::vector<std::int64_t>{2, 3});
  CHECK_FALSE(loaded->Find("b")->shape.has_value());
  auto bad = Save(dir.path, 8, {{"w", std::vector<float>(6), std::vector<std::int64_t>{3, 3}}}, 5);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Has(std::string(bad.status().message()), "checkpoint entry w"));
  CHECK(LatestStep(dir.path) == 7);  // nothing written
  // A hostile index: a shape that is not the count's, not an array, negative or overflowing.
  CHECK(Has(LoadError([](auto& j) {
              j["entries"][0]["shape"] = {2, 2};
            }),
            "entries[0].shape does not hold the 3 values of its entry"));
  CHECK(Has(LoadError([](auto& j) { j["entries"][0]["shape"] = "3"; }),
            "entries[0].shape must be an array"));
  CHECK(Has(LoadError([](auto& j) {
              j["entries"][0]["shape"] = {-1, -3};
            }),
            "entries[0].shape must hold integers >= 0"));
  CHECK(Has(LoadError([](auto& j) {
              j["entries"][0]["shape"] = {std::int64_t{1} << 62, std::int64_t{1} << 62, 0};
            }),
            "entries[0].shape does not hold"));
  CHECK(Has(LoadError([](auto& j) {
              j["entries"][0]["shape"] = {3, 1.5};
            }),
            "entries[0].shape must hold integers"));
}

TEST_CASE("every size, offset and count of the index is checked before allocating") {
  // Counts that would overflow count * 4, or need more bytes than the data file has.
  CHECK(Has(LoadError([](auto& j) { j["entries"][0]["count"] = std::int64_t{1} << 62; }),
            "model.ckpt-5.index: entries[0].count 4611686018427387904 is outside [0, 4]"));
  CHECK(Has(LoadError([](auto& j) { j["entries"][0]["count"] = ~std::uint64_t{0}; }),
            "entries[0].count must be an integer"));
  CHECK(Has(LoadError([](auto& j) { j["entries"][1]["count"] = 3; }),
            "entries[1].count 3 is outside [0, 1]"));
  CHECK(Has(LoadError([](auto& j) { j["entries"][0]["offset"] = -4; }),
            "entries[0].offset -4 is outside [0, 16]"));
  CHECK(Has(LoadError([](auto& j) { j["entries"][0]["offset"] = std::int64_t{1} << 62; }),
            "entries[0].offset"));
  CHECK(Has(LoadError([](auto& j) { j["data_bytes"] = 1 << 30; }),
            "but the index's data_bytes says 1073741824"));
  CHECK(Has(LoadError([](auto& j) { j["global_step"] = -1; }), "global_step -1 is outside"));
  CHECK(Has(LoadError([](auto& j) { j["entries"][0]["crc32c"] = std::int64_t{1} << 40; }),
            "entries[0].crc32c"));
  // Any JSON type where a number, a string or an array belongs.
  CHECK(Has(LoadError([](auto& j) { j["entries"][0]["offset"] = "0"; }),
            "entries[0].offset must be an integer, got string"));
  CHECK(Has(LoadError([](auto& j) { j["entries"][0]["name"] = 7; }),
            "entries[0].name must be a non-empty string"));
  CHECK(Has(LoadError([](auto& j) { j["entries"] = nlohmann::json::object(); }),
            "entries must be an array"));
  CHECK(Has(LoadError([](auto& j) { j = nlohmann::json::array(); }), "format must be"));
  CHECK(Has(LoadError([](auto& j) { j.erase("global_step"); }),
            "global_step must be an integer, got nothing"));
}

TEST_CASE("an index larger than any real one is refused unread") {
  TempDir dir;
  auto prefix = Save(dir.path, 5, Entries(5), 5);
  REQUIRE(prefix.ok());
  fs::resize_file(*prefix + ".index", std::uintmax_t{65} << 20);
  auto loaded = Load(*prefix);
  REQUIRE_FALSE(loaded.ok());
  CHECK(Has(std::string(loaded.status().message()), "more than the 67108864"));
}

TEST_CASE("a checkpoint file naming a path outside the model dir is ignored") {
  TempDir dir;
  REQUIRE(Save(dir.path, 1, Entries(1), 5).ok());
  std::ofstream(dir.path / "checkpoint")
      << "model_checkpoint_path: \"../../etc/x\"\nall_model_checkpoint_paths: \"model.ckpt-1\"\n"
      << "all_model_checkpoint_paths: \"/etc/passwd\"\nall_model_checkpoint_paths: \"..\"\n";
  auto all = ListCheckpoints(dir.path);
  REQUIRE(all.size() == 1);
  CHECK(all[0] == (dir.path / "model.ckpt-1").string());
}

// Files may grow to `bytes` while alive (a full disk, seen by write() as EFBIG).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    std::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() { ::setrlimit(RLIMIT_FSIZE, &saved_); }

 private:
  rlimit saved_{};
};

TEST_CASE("a failed write removes its temporary file and keeps the previous checkpoint") {
  TempDir dir;
  REQUIRE(Save(dir.path, 1, Entries(1), 5).ok());
  const std::vector<Entry> big = {{"w", std::vector<float>(100000, 1.0f)}};
  {
    FileSizeLimit limit(4096);
    auto failed = Save(dir.path, 2, big, 5);
    REQUIRE_FALSE(failed.ok());
    CHECK(Has(std::string(failed.status().message()), "cannot write"));
    CHECK(Has(std::string(failed.status().message()), "model.ckpt-2.data.tmp"));
  }
  for (const auto& entry : fs::directory_iterator(dir.path)) {
    CAPTURE(entry.path());
    CHECK(entry.path().extension() != ".tmp");
    CHECK(entry.path().filename() != "model.ckpt-2.data");
  }
  CHECK(LatestStep(dir.path) == 1);
  auto latest = LoadLatest(dir.path, nullptr);
  REQUIRE(latest.ok());
  CHECK((*latest)->global_step == 1);
}

TEST_CASE("a save into a dir it cannot create fails naming the dir") {
  TempDir dir;
  std::ofstream(dir.path / "file") << "x";
  auto failed = Save((dir.path / "file" / "model").string(), 1, Entries(1), 5);
  REQUIRE_FALSE(failed.ok());
  CHECK(Has(std::string(failed.status().message()), "cannot create model dir"));
}

}  // namespace
}  // namespace taas::checkpoint
