#include "taas/checkpoint/checkpoint.h"

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "taas/checkpoint/safetensors.h"
#include "taas/crc32c/crc32c.h"

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
  CHECK(fs::exists(dir.path / "model.ckpt-42.safetensors"));
  CHECK_FALSE(fs::exists(dir.path / "model.ckpt-42.index"));  // the format before safetensors
  CHECK_FALSE(fs::exists(dir.path / "model.ckpt-42.data"));
  CHECK(LatestStep(dir.path) == 42);
  auto loaded = Load(*prefix);
  REQUIRE(loaded.ok());
  CHECK(loaded->global_step == 42);
  REQUIRE(loaded->Find("w") != nullptr);
  CHECK(loaded->Find("w")->values == std::vector<float>{1, 2, 3});
  CHECK(loaded->Find("w/slot_0")->values == std::vector<float>{0.5f});
  CHECK(loaded->Find("b")->values.empty());
  CHECK(loaded->Find("missing") == nullptr);
  // Entries saved without a shape come back as vectors.
  CHECK(loaded->Find("w")->shape == std::vector<std::int64_t>{3});
  CHECK(loaded->Find("b")->shape == std::vector<std::int64_t>{0});
}

TEST_CASE("a checkpoint is a safetensors file with the step and checksums in its metadata") {
  TempDir dir;
  auto prefix = Save(dir.path, 9, {{"w", {1, 2, 3, 4, 5, 6}, std::vector<std::int64_t>{2, 3}}}, 3);
  REQUIRE(prefix.ok());
  auto file = safetensors::ReadFloat32(*prefix + ".safetensors");
  REQUIRE(file.ok());
  REQUIRE(file->header.tensors.size() == 1);
  CHECK(file->header.tensors[0].name == "w");
  CHECK(file->header.tensors[0].dtype == "F32");
  CHECK(file->header.tensors[0].shape == std::vector<std::int64_t>{2, 3});
  CHECK(file->header.data_start % 8 == 0);  // aligned, as the reference writer aligns
  CHECK(file->header.metadata.at("format") == "taas-checkpoint-2");
  CHECK(file->header.metadata.at("global_step") == "9");
  const std::vector<float> w = {1, 2, 3, 4, 5, 6};
  CHECK(file->header.metadata.at("crc32c.w") ==
        std::to_string(crc32c::Value(w.data(), w.size() * sizeof(float))));
}

// Rewrites the __metadata__ of the safetensors checkpoint at `prefix` with `edit`, keeping the
// tensors where they are.
void EditMetadata(const std::string& prefix,
                  const std::function<void(std::map<std::string, std::string>&)>& edit) {
  auto file = safetensors::ReadFloat32(prefix + ".safetensors");
  REQUIRE(file.ok());
  std::vector<safetensors::Float32Tensor> tensors;
  for (std::size_t i = 0; i < file->header.tensors.size(); ++i) {
    tensors.push_back(
        {file->header.tensors[i].name, file->header.tensors[i].shape, file->values[i].data()});
  }
  edit(file->header.metadata);
  auto header = safetensors::EncodeHeader(tensors, file->header.metadata);
  REQUIRE(header.ok());
  std::ofstream out(prefix + ".safetensors", std::ios::binary | std::ios::trunc);
  out << *header;
  for (const auto& values : file->values) {
    out.write(reinterpret_cast<const char*>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(float)));
  }
}

TEST_CASE("a taas checkpoint's metadata is checked: format, global step, every checksum") {
  TempDir dir;
  auto prefix = Save(dir.path, 4, Entries(4), 3);
  REQUIRE(prefix.ok());
  const auto error = [&](const std::function<void(std::map<std::string, std::string>&)>& edit) {
    EditMetadata(*prefix, edit);
    auto loaded = Load(*prefix);
    REQUIRE_FALSE(loaded.ok());
    CHECK(loaded.status().code() == absl::StatusCode::kDataLoss);
    return std::string(loaded.status().message());
  };
  const auto has = [](const std::string& text, const std::string& part) {
    CAPTURE(text);
    CHECK(text.find(part) != std::string::npos);
  };
  has(error([](auto& m) { m["crc32c.w"] = "1"; }),
      "model.ckpt-4.safetensors: checksum mismatch in w");
  has(error([](auto& m) { m.erase("crc32c.w"); }), "tensor \"w\" has no crc32c");
  has(error([](auto& m) { m["global_step"] = "-3"; }), "global_step must be an integer >= 0");
  has(error([](auto& m) { m["global_step"] = "4x"; }), "got \"4x\"");
  has(error([](auto& m) { m.erase("format"); }), "format must be \"taas-checkpoint-2\"");
}

TEST_CASE("keeps only the newest K and names the latest in the checkpoint file") {
  TempDir dir;
  for (int step = 10; step <= 50; step += 10) REQUIRE(Save(dir.path, step, Entries(step), 2).ok());
  auto all = ListCheckpoints(dir.path);
  REQUIRE(all.size() == 2);
  CHECK(all[0] == (dir.path / "model.ckpt-40").string());
  CHECK(all[1] == (dir.path / "model.ckpt-50").string());
  CHECK_FALSE(fs::exists(dir.path / "model.ckpt-30.safetensors"));
  CHECK_FALSE(fs::exists(dir.path / "model.ckpt-10.safetensors"));
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
    // The data is w's 3 floats then w/slot_0's one, at the end of the file: change w's first.
    const auto size = fs::file_size(dir.path / "model.ckpt-2.safetensors");
    std::fstream data(dir.path / "model.ckpt-2.safetensors",
                      std::ios::in | std::ios::out | std::ios::binary);
    data.seekp(static_cast<std::streamoff>(size - 16));
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

  fs::resize_file(dir.path / "model.ckpt-1.safetensors", 3);
  auto truncated = Load((dir.path / "model.ckpt-1").string());
  CHECK(truncated.status().code() == absl::StatusCode::kDataLoss);
}

TEST_CASE("an interrupted save leaves the previous checkpoint as the latest") {
  TempDir dir;
  REQUIRE(Save(dir.path, 7, Entries(7), 5).ok());
  // A crash before the `checkpoint` file names the new one: only a .tmp or an orphan file exists.
  std::ofstream(dir.path / "model.ckpt-8.safetensors.tmp") << "partial";
  std::ofstream(dir.path / "model.ckpt-8.safetensors") << "orphan";
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
  fs::resize_file(dir.path / "model.ckpt-3.safetensors", 5);
  std::vector<std::string> skipped;
  auto latest = LoadLatest(dir.path, &skipped);
  REQUIRE_FALSE(latest.ok());
  CHECK(latest.status().code() == absl::StatusCode::kDataLoss);
  CHECK(std::string(latest.status().message()).find("none of its 1 checkpoints verifies") !=
        std::string::npos);
  CHECK(skipped.size() == 1);
}

// Writes a checkpoint as taas did before safetensors (model.ckpt-<step>.index and .data) and
// lists it in `dir`'s `checkpoint` file after those already there: the model dirs that must
// still resume and warm-start.
std::string SaveIndexed(const fs::path& dir, std::int64_t step, const std::vector<Entry>& entries) {
  const std::string name = "model.ckpt-" + std::to_string(step);
  nlohmann::json index = {
      {"format", "taas-checkpoint-1"}, {"global_step", step}, {"entries", nlohmann::json::array()}};
  std::ofstream data(dir / (name + ".data"), std::ios::binary);
  std::uint64_t offset = 0;
  for (const Entry& e : entries) {
    const std::size_t bytes = e.values.size() * sizeof(float);
    nlohmann::json entry = {{"name", e.name},
                            {"offset", offset},
                            {"count", e.values.size()},
                            {"crc32c", crc32c::Value(e.values.data(), bytes)}};
    if (e.shape) entry["shape"] = *e.shape;
    index["entries"].push_back(entry);
    data.write(reinterpret_cast<const char*>(e.values.data()), static_cast<std::streamsize>(bytes));
    offset += bytes;
  }
  index["data_bytes"] = offset;
  std::ofstream(dir / (name + ".index")) << index.dump(1);
  std::string listed;
  for (const auto& p : ListCheckpoints(dir)) {
    listed += "all_model_checkpoint_paths: \"" + fs::path(p).filename().string() + "\"\n";
  }
  std::ofstream(dir / "checkpoint") << "model_checkpoint_path: \"" << name << "\"\n"
                                    << listed << "all_model_checkpoint_paths: \"" << name << "\"\n";
  return (dir / name).string();
}

TEST_CASE("a model dir of the format before safetensors still loads, and a new save joins it") {
  TempDir dir;
  SaveIndexed(dir.path, 1, {{"w", {1, 2, 3, 4}, std::vector<std::int64_t>{2, 2}}, {"b", {7}}});
  auto old = LoadLatest(dir.path, nullptr);
  REQUIRE(old.ok());
  REQUIRE(old->has_value());
  CHECK((*old)->global_step == 1);
  CHECK((*old)->Find("w")->values == std::vector<float>{1, 2, 3, 4});
  CHECK((*old)->Find("w")->shape == std::vector<std::int64_t>{2, 2});
  CHECK_FALSE((*old)->Find("b")->shape.has_value());  // written before shapes were recorded
  REQUIRE(Save(dir.path, 2, Entries(2), 5).ok());
  CHECK(ListCheckpoints(dir.path).size() == 2);
  CHECK(LatestStep(dir.path) == 2);
  // The new one corrupt: the old one is the newest that verifies.
  fs::resize_file(dir.path / "model.ckpt-2.safetensors", 20);
  auto fallback = LoadLatest(dir.path, nullptr);
  REQUIRE(fallback.ok());
  CHECK((*fallback)->global_step == 1);
  // Rotation removes the old format's files too.
  REQUIRE(Save(dir.path, 3, Entries(3), 2).ok());
  CHECK_FALSE(fs::exists(dir.path / "model.ckpt-1.index"));
  CHECK_FALSE(fs::exists(dir.path / "model.ckpt-1.data"));
  auto missing = Load((dir.path / "model.ckpt-1").string());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(std::string(missing.status().message()).find("model.ckpt-1.safetensors") !=
        std::string::npos);
}

// Writes `index` as the index of the checkpoint at `prefix`.
void WriteIndex(const fs::path& prefix, const nlohmann::json& index) {
  std::ofstream(prefix.string() + ".index") << index.dump();
}

// Loads after `edit` changed the saved index; the error's message.
std::string LoadError(const std::function<void(nlohmann::json&)>& edit) {
  TempDir dir;
  const auto prefix = std::optional<std::string>(SaveIndexed(dir.path, 5, Entries(5)));
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

TEST_CASE("an entry's shape is kept and checked against its count") {
  TempDir dir;
  auto prefix =
      Save(dir.path, 7,
           {{"w", std::vector<float>(6, 1.0f), std::vector<std::int64_t>{2, 3}}, {"b", {1.0f}}}, 5);
  REQUIRE(prefix.ok());
  auto loaded = Load(*prefix);
  REQUIRE(loaded.ok());
  REQUIRE(loaded->Find("w")->shape.has_value());
  CHECK(*loaded->Find("w")->shape == std::vector<std::int64_t>{2, 3});
  auto bad = Save(dir.path, 8, {{"w", std::vector<float>(6), std::vector<std::int64_t>{3, 3}}}, 5);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Has(std::string(bad.status().message()), "checkpoint entry w"));
  CHECK(LatestStep(dir.path) == 7);  // nothing written
  // A hostile old-format index: a shape that is not the count's, not an array, negative or
  // overflowing.
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

TEST_CASE("every size, offset and count of an old-format index is checked before allocating") {
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
  const std::string prefix = SaveIndexed(dir.path, 5, Entries(5));
  fs::resize_file(prefix + ".index", std::uintmax_t{65} << 20);
  auto loaded = Load(prefix);
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
    CHECK(Has(std::string(failed.status().message()), "model.ckpt-2.safetensors.tmp"));
  }
  for (const auto& entry : fs::directory_iterator(dir.path)) {
    CAPTURE(entry.path());
    CHECK(entry.path().extension() != ".tmp");
    CHECK(entry.path().filename() != "model.ckpt-2.safetensors");
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
