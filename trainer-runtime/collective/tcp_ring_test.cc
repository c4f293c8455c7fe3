// The TCP ring across real processes on 127.0.0.1: each rank is a forked child that reports one
// line back through a pipe ("ok <digest>" or the error), so the parent checks every rank.
#include "taas/collective/tcp_ring.h"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "taas/collective_testing/free_addresses.h"
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <thread>

namespace taas::collective {
namespace {

using RankBody = std::function<std::string(Collective&, int rank)>;

struct RingRun {
  int ranks = 2;
  double timeout_secs = 30;
  std::int64_t chunk_bytes = 4096;
  // Per rank: the token it proves, and a delay before it joins.
  std::function<std::string(int)> token = [](int) { return std::string(64, 'a'); };
  std::function<double(int)> start_delay = [](int) { return 0.0; };
  std::function<std::uint64_t(int)> incarnation = [](int) { return std::uint64_t{0}; };
  // An older incarnation of one rank, still running beside the rank's current process, as a pod
  // on a node that was only cut off does: it listens where no rank dials (its replacement owns the
  // rank's address, as the replica's service then points at the replacement). Its line comes last.
  struct Stale {
    int rank = 0;
    std::uint64_t incarnation = 0;
    double start_delay = 0;
  };
  std::optional<Stale> stale;
};

// Forks one process per rank; each forms the ring and runs `body`. Returns each rank's line.
std::vector<std::string> RunRing(const RingRun& run, const RankBody& body) {
  const int processes = run.ranks + (run.stale ? 1 : 0);
  const auto free = collective_testing::FreeLoopbackAddresses(processes);
  REQUIRE(free.ok());
  const std::vector<std::string> addresses(free->begin(), free->begin() + run.ranks);
  std::vector<pid_t> children;
  std::vector<int> pipes;
  for (int process = 0; process < processes; ++process) {
    const bool stale = process == run.ranks;
    const int rank = stale ? run.stale->rank : process;
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      std::this_thread::sleep_for(
          std::chrono::duration<double>(stale ? run.stale->start_delay : run.start_delay(rank)));
      TcpRingOptions options;
      options.addresses = addresses;
      if (stale) options.addresses[static_cast<std::size_t>(rank)] = free->back();
      options.rank = rank;
      options.incarnation = stale ? run.stale->incarnation : run.incarnation(rank);
      options.bind_host = "127.0.0.1";
      options.token = run.token(rank);
      options.timeout_secs = run.timeout_secs;
      options.chunk_bytes = run.chunk_bytes;
      std::string line;
      {
        auto ring = ConnectTcpRing(options, Logger(stderr, LogLevel::kWarning));
        line = ring.ok() ? body(**ring, rank) : "connect: " + ring.status().ToString();
      }
      (void)!::write(fds[1], line.data(), line.size());
      ::_exit(0);
    }
    ::close(fds[1]);
    children.push_back(pid);
    pipes.push_back(fds[0]);
  }
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < children.size(); ++i) {
    std::string line;
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(pipes[i], buffer, sizeof(buffer))) > 0) line.append(buffer, n);
    ::close(pipes[i]);
    int status = 0;
    ::waitpid(children[i], &status, 0);
    lines.push_back(line);
  }
  return lines;
}

std::string Digest(std::span<const float> data) {
  return std::to_string(std::hash<std::string_view>()(
      std::string_view(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float))));
}

// Up to 64 KiB (16384 floats) a small all-reduce gathers every rank's buffer; above, the ring
// reduce-scatters and all-gathers in chunks of 4 KB.
const std::vector<std::size_t> kSizes = {0,    1,    2,    3,     5,     7,     13,
                                         1021, 1024, 4099, 10007, 16384, 16411, 100003};

TEST_CASE("all-reduce across 2, 3 and 4 processes is exact for every size") {
  for (int ranks : {2, 3, 4}) {
    CAPTURE(ranks);
    RingRun run;
    run.ranks = ranks;
    auto lines = RunRing(run, [&](Collective& ring, int rank) -> std::string {
      for (std::size_t n : kSizes) {
        std::vector<float> sum(n), mean(n);
        for (std::size_t i = 0; i < n; ++i) {
          sum[i] = static_cast<float>((rank + 1) * static_cast<int>(i % 97));
          mean[i] = static_cast<float>(2 * ranks * static_cast<int>(i % 31) + 2 * rank);
        }
        if (absl::Status s = ring.AllReduce(sum, ReduceOp::kSum).Wait(); !s.ok()) {
          return s.ToString();
        }
        if (absl::Status s = ring.AllReduce(mean, ReduceOp::kMean).Wait(); !s.ok()) {
          return s.ToString();
        }
        for (std::size_t i = 0; i < n; ++i) {
          const float want_sum = static_cast<float>(ranks * (ranks + 1) / 2 * (i % 97));
          // mean over r of 2*ranks*x + 2r = 2*ranks*x + (ranks - 1)
          const float want_mean =
              static_cast<float>(2 * ranks * static_cast<int>(i % 31) + (ranks - 1));
          if (sum[i] != want_sum || mean[i] != want_mean) {
            return "size " + std::to_string(n) + " element " + std::to_string(i) + ": sum " +
                   std::to_string(sum[i]) + " mean " + std::to_string(mean[i]);
          }
        }
      }
      return "ok";
    });
    for (const auto& line : lines) CHECK(line == "ok");
  }
}

TEST_CASE("random floats reduce to the same bits on every rank, and again on a second run") {
  std::vector<std::string> first;
  for (int attempt = 0; attempt < 2; ++attempt) {
    RingRun run;
    run.ranks = 3;
    auto lines = RunRing(run, [](Collective& ring, int rank) -> std::string {
      std::mt19937 random(static_cast<unsigned>(rank + 1));
      std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
      std::string digests;
      for (std::size_t n : {std::size_t{9001}, std::size_t{70001}}) {  // gathered, and the ring
        std::vector<float> data(n);
        for (float& x : data) x = uniform(random);
        if (absl::Status s = ring.AllReduce(data, ReduceOp::kMean).Wait(); !s.ok()) {
          return s.ToString();
        }
        digests += " " + Digest(data);
      }
      return "ok" + digests;
    });
    REQUIRE(lines[0].rfind("ok ", 0) == 0);
    for (const auto& line : lines) CHECK(line == lines[0]);
    if (attempt == 0) first = lines;
    CHECK(lines == first);
  }
}

#if defined(__SSE__)
TEST_CASE("a rank whose thread flushes denormals to zero still gets the others' bits") {
  RingRun run;
  run.ranks = 3;
  auto lines = RunRing(run, [](Collective& ring, int rank) -> std::string {
    // A numerics library may set flush-to-zero and denormals-are-zero on a training thread; a
    // small all-reduce runs on the caller's thread and each rank adds the buffers itself.
    if (rank == 0) _mm_setcsr(_mm_getcsr() | 0x8040);
    std::vector<float> data(1000, 1e-40f);  // denormal: FTZ/DAZ arithmetic would make it 0
    if (absl::Status s = ring.AllReduce(data, ReduceOp::kSum).Wait(); !s.ok()) {
      return s.ToString();
    }
    if (rank == 0) _mm_setcsr(_mm_getcsr() & ~0x8040u);
    return "ok " + Digest(data) + " " + std::to_string(data[0] > 0.0f);
  });
  REQUIRE(lines[1].rfind("ok ", 0) == 0);
  CHECK(lines[1].substr(lines[1].size() - 2) == " 1");
  for (const auto& line : lines) CHECK(line == lines[1]);
}
#endif

TEST_CASE("broadcast from every root, barriers, and several operations in flight") {
  RingRun run;
  run.ranks = 4;
  auto lines = RunRing(run, [](Collective& ring, int rank) -> std::string {
    for (int root = 0; root < ring.size(); ++root) {
      for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{10000}}) {
        std::vector<std::byte> data(n, std::byte{0});
        if (rank == root) {
          for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<std::byte>(i * 7 + root);
        }
        if (absl::Status s = ring.Broadcast(data, root).Wait(); !s.ok()) return s.ToString();
        for (std::size_t i = 0; i < n; ++i) {
          if (data[i] != static_cast<std::byte>(i * 7 + root)) {
            return "broadcast from " + std::to_string(root) + " byte " + std::to_string(i);
          }
        }
      }
      if (absl::Status s = ring.Barrier(); !s.ok()) return s.ToString();
    }
    std::vector<std::vector<float>> buckets(3, std::vector<float>(3000, 1.0f));
    std::vector<Handle> handles;
    for (auto& bucket : buckets) handles.push_back(ring.AllReduce(bucket, ReduceOp::kSum));
    for (const auto& handle : handles) {
      if (absl::Status s = handle.Wait(); !s.ok()) return s.ToString();
    }
    for (const auto& bucket : buckets) {
      for (float x : bucket) {
        if (x != 4.0f) return "bucket element " + std::to_string(x);
      }
    }
    if (ring.Broadcast(buckets[0].empty() ? std::span<std::byte>() : AsBytes(buckets[0]), 9)
            .Wait()
            .code() != absl::StatusCode::kInvalidArgument) {
      return "a root outside the ring was accepted";
    }
    return "ok";
  });
  for (const auto& line : lines) CHECK(line == "ok");
}

TEST_CASE("a peer that exits fails the others at once, naming it") {
  RingRun run;
  run.ranks = 3;
  const auto start = std::chrono::steady_clock::now();
  auto lines = RunRing(run, [](Collective& ring, int rank) -> std::string {
    if (rank == 2) return "left";  // the ring is destroyed: its connections close
    std::vector<float> data(100000, 1.0f);
    absl::Status s = ring.AllReduce(data, ReduceOp::kSum).Wait();
    absl::Status later = ring.Barrier();
    return s.ToString() + " | later: " + std::string(absl::StatusCodeToString(later.code()));
  });
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(secs < 10);  // the timeout is 30 s: closed connections, not the timeout, ended it
  for (int rank : {0, 1}) {
    CAPTURE(lines[static_cast<std::size_t>(rank)]);
    CHECK(lines[static_cast<std::size_t>(rank)].rfind("UNAVAILABLE", 0) == 0);
    CHECK(lines[static_cast<std::size_t>(rank)].find("lost rank") != std::string::npos);
    CHECK(lines[static_cast<std::size_t>(rank)].find("later: UNAVAILABLE") != std::string::npos);
  }
}

TEST_CASE("a peer that exits in the middle of an operation fails the others at once") {
  RingRun run;
  run.ranks = 3;
  const auto start = std::chrono::steady_clock::now();
  auto lines = RunRing(run, [](Collective& ring, int rank) -> std::string {
    if (rank == 2) {
      // Dies without closing anything itself, while the ring is busy.
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ::_exit(0);
      }).detach();
    }
    std::vector<float> data(1 << 20, 1.0f);  // 4 MB in 4 KB chunks: the ring is always busy
    for (int op = 0;; ++op) {
      if (absl::Status s = ring.AllReduce(data, ReduceOp::kSum).Wait(); !s.ok()) {
        return s.ToString();
      }
      std::fill(data.begin(), data.end(), 1.0f);
    }
  });
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(secs < 10);  // the timeout is 30 s
  CHECK(lines[2].empty());
  for (int rank : {0, 1}) {
    CAPTURE(lines[static_cast<std::size_t>(rank)]);
    CHECK(lines[static_cast<std::size_t>(rank)].rfind("UNAVAILABLE: all-reduce (sum) #", 0) == 0);
    CHECK(lines[static_cast<std::size_t>(rank)].find("lost rank") != std::string::npos);
  }
}

TEST_CASE("a peer that goes silent fails the operation after the timeout") {
  RingRun run;
  run.timeout_secs = 1;
  auto lines = RunRing(run, [](Collective& ring, int rank) -> std::string {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(3));
      return "slept";
    }
    std::vector<float> data(10, 1.0f);
    return ring.AllReduce(data, ReduceOp::kSum).Wait().ToString();
  });
  CAPTURE(lines[0]);
  CHECK(lines[0].rfind("DEADLINE_EXCEEDED", 0) == 0);
  CHECK(lines[0].find("no byte moved for") != std::string::npos);
}

TEST_CASE("a ring forms whatever order its ranks start in; a wrong token never joins") {
  RingRun late;
  late.ranks = 3;
  late.start_delay = [](int rank) { return rank == 0 ? 1.0 : 0.0; };
  auto lines = RunRing(late, [](Collective& ring, int) { return ring.Barrier().ToString(); });
  for (const auto& line : lines) CHECK(line == "OK");

  RingRun foreign;
  foreign.timeout_secs = 2;
  foreign.token = [](int rank) { return std::string(64, rank == 1 ? 'b' : 'a'); };
  lines = RunRing(foreign, [](Collective&, int) { return std::string("joined"); });
  for (const auto& line : lines) {
    CAPTURE(line);
    CHECK(line.rfind("connect: DEADLINE_EXCEEDED", 0) == 0);
    // Each rank refused the other's hello, and says why.
    CHECK(line.find("the last connection refused: the peer proved another job's token") !=
          std::string::npos);
    CHECK(line.find("hung up on this rank's hello") != std::string::npos);
  }
}

TEST_CASE("an older incarnation of a rank never closes the ring, whether it joins first or last") {
  for (const bool stale_first : {true, false}) {
    CAPTURE(stale_first);
    RingRun run;
    run.ranks = 3;
    run.timeout_secs = 20;
    run.incarnation = [](int rank) { return std::uint64_t(rank == 1 ? 6 : 1); };
    // First: the old rank 1 is rank 2's previous rank before its replacement starts, and is
    // replaced while rank 2 waits for the seal. Last: the replacement joined rank 2 first, and the
    // old one connects while rank 2 waits for rank 0 (started late) to close the ring.
    run.start_delay = [stale_first](int rank) {
      return (stale_first ? rank == 1 : rank == 0) ? 1.0 : 0.0;
    };
    run.stale = RingRun::Stale{1, 5, stale_first ? 0.0 : 0.5};
    const auto lines = RunRing(run, [](Collective& ring, int rank) {
      std::vector<float> data = {static_cast<float>(rank + 1)};
      const absl::Status status = ring.AllReduce(data, ReduceOp::kSum).Wait();
      return status.ok() ? "sum " + std::to_string(static_cast<int>(data[0])) : status.ToString();
    });
    REQUIRE(lines.size() == 4);
    // The ring is ranks 0, 2 and the replacement: 1 + 2 + 3.
    for (int rank = 0; rank < 3; ++rank) CHECK(lines[static_cast<std::size_t>(rank)] == "sum 6");
    // The old one is told at once, not left to its timeout.
    CAPTURE(lines[3]);
    CHECK(lines[3].rfind("connect: FAILED_PRECONDITION: rank 1 incarnation 5 is fenced: "
                         "incarnation 6 of rank 1 joined since",
                         0) == 0);
  }
}

TEST_CASE("bad options are refused before any connection") {
  TcpRingOptions options;
  options.addresses = {"127.0.0.1:1", "127.0.0.1:2"};
  options.rank = 2;
  CHECK(ConnectTcpRing(options, Logger()).status().code() == absl::StatusCode::kInvalidArgument);
  options.rank = 0;
  options.addresses = {"no-port", "127.0.0.1:2"};
  CHECK(ConnectTcpRing(options, Logger()).status().code() == absl::StatusCode::kInvalidArgument);
  options.addresses = {"127.0.0.1:1"};
  auto alone = ConnectTcpRing(options, Logger());
  REQUIRE(alone.ok());
  std::vector<float> data = {1, 2};
  CHECK((*alone)->AllReduce(data, ReduceOp::kMean).Wait().ok());
  CHECK(data == std::vector<float>{1, 2});
}

}  // namespace
}  // namespace taas::collective
