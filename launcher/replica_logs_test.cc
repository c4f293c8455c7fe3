#include "replica_logs.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("taas-logs-test-" + std::to_string(::getpid()));
  ~TempDir() { fs::remove_all(path); }
};

TEST_CASE("replica logs: a file per replica under the folder, lines appended across restarts") {
  TempDir tmp;
  auto logs = ReplicaLogFiles::Create((tmp.path / "logs").string());
  REQUIRE(logs.ok());
  CHECK((*logs)->PathOf("job-worker-0") == (tmp.path / "logs" / "job-worker-0.log").string());
  CHECK((*logs)->Append("job-worker-0", "first").ok());
  CHECK((*logs)->Append("job-ps-0", "ps line").ok());
  CHECK((*logs)->Append("job-worker-0", "").ok());
  CHECK((*logs)->Append("job-worker-0", "third").ok());
  // Written through: readable at once, as `tail -f` would read it.
  CHECK(Read((*logs)->PathOf("job-worker-0")) == "first\n\nthird\n");
  CHECK(Read((*logs)->PathOf("job-ps-0")) == "ps line\n");

  // A second launcher on the same model dir (a rerun) appends.
  logs->reset();
  auto again = ReplicaLogFiles::Create((tmp.path / "logs").string());
  REQUIRE(again.ok());
  CHECK((*again)->Append("job-worker-0", "rerun").ok());
  CHECK(Read((*again)->PathOf("job-worker-0")) == "first\n\nthird\nrerun\n");
}

TEST_CASE("replica logs: whole lines from concurrent readers") {
  TempDir tmp;
  auto logs = ReplicaLogFiles::Create(tmp.path.string());
  REQUIRE(logs.ok());
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&logs, r] {
      for (int i = 0; i < 200; ++i) (void)(*logs)->Append("r" + std::to_string(r % 2), "line");
    });
  }
  for (auto& t : readers) t.join();
  CHECK(Read((*logs)->PathOf("r0")) == [] {
    std::string all;
    for (int i = 0; i < 400; ++i) all += "line\n";
    return all;
  }());
}

TEST_CASE("replica logs: names that would leave the folder, folders that cannot be made") {
  TempDir tmp;
  auto logs = ReplicaLogFiles::Create(tmp.path.string());
  REQUIRE(logs.ok());
  for (const char* bad : {"", ".", "..", "../x", "a/b"}) {
    CHECK((*logs)->Append(bad, "line").code() == absl::StatusCode::kInvalidArgument);
  }
  std::ofstream(tmp.path / "file") << "x";
  auto under_file = ReplicaLogFiles::Create((tmp.path / "file" / "logs").string());
  CHECK_FALSE(under_file.ok());
  CHECK(std::string(under_file.status().message()).find("cannot create the log folder") == 0);
}

TEST_CASE("replica logs: a full file moves to .1 and a new one starts, so the disk cannot fill") {
  TempDir tmp;
  auto logs = ReplicaLogFiles::Create(tmp.path.string(), /*rotate_bytes=*/10);
  REQUIRE(logs.ok());
  const std::string path = (*logs)->PathOf("w");
  CHECK((*logs)->Append("w", "12345").ok());  // 6 bytes
  CHECK((*logs)->Append("w", "6789").ok());   // 11: full
  CHECK(Read(path) == "12345\n6789\n");
  CHECK((*logs)->Append("w", "next").ok());
  CHECK(Read(path + ".1") == "12345\n6789\n");
  CHECK(Read(path) == "next\n");
  for (int i = 0; i < 3; ++i) CHECK((*logs)->Append("w", "abcdefghij").ok());
  CHECK(Read(path + ".1") == "abcdefghij\n");  // one older file kept, the oldest gone
  CHECK(Read(path) == "abcdefghij\n");

  // A rerun on the same model dir finds a full file and rotates it before appending.
  logs->reset();
  auto again = ReplicaLogFiles::Create(tmp.path.string(), 10);
  REQUIRE(again.ok());
  CHECK((*again)->Append("w", "rerun").ok());
  CHECK(Read(path + ".1") == "abcdefghij\n");
  CHECK(Read(path) == "rerun\n");
}

}  // namespace
}  // namespace taas::launcher
