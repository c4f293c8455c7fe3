// Parameter-server benchmark, two tables from one run on this machine:
//
// 1. Transport: push+pull of 1, 16 and 128 MB of parameters through the PS over gRPC on loopback
//    (async SGD applied on push, all PS in this process) against a raw single-stream loopback TCP
//    socket moving the same bytes out and back with the same message size. Raw and PS rounds
//    alternate, R times each, and the medians are compared, so a burst of load elsewhere on the
//    machine hits both.
// 2. PS update: the PS's own kernels (sync aggregation sum, SGD, momentum, Adam) over N floats,
//    as bytes touched per second against a STREAM-like memory bandwidth measured in the same run.
//
// 3. Latency: microseconds per training-step round trip of small models (4 bytes, 64 KB, the
//    Fashion-MNIST CNN's 375 KB), a Push then a Pull against one Push whose reply carries the
//    values.
//
// Usage: taas_ps_bench [--ps N] [--lanes L] [--sizes MB,MB,...] [--reps R] [--chunk-kb K]
//                      [--update-mb M] [--latency-kb KB,KB,...]
// (--ps: PS tasks, --lanes: lanes per task, taas/ps/client.h; the default is the trainer's)
// (an empty --sizes or --latency-kb, or --update-mb 0, skips that table).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "taas/bench/measure.h"
#include "taas/optim/optimizer.h"
#include "taas/ps/client.h"
#include "taas/ps/server.h"
#include "taas/ps/store.h"

namespace {

using taas::bench::Clock;
using taas::bench::CpuSeconds;
using taas::bench::Median;
using taas::bench::Seconds;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "taas_ps_bench: %s\n", what.c_str());
  std::exit(1);
}

// --- Raw socket -------------------------------------------------------------------------------

void WriteAll(int fd, const char* p, std::size_t n, std::size_t message) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, std::min(n, message), 0);
    if (w <= 0) Fail("raw socket send failed");
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void ReadAll(int fd, char* p, std::size_t n, std::size_t message) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, std::min(n, message), 0);
    if (r <= 0) Fail("raw socket recv failed");
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

// One loopback TCP connection with an echo thread: each round sends `bytes` in writes of
// `message` bytes and reads them back (the PS's push, then its pull).
class RawEcho {
 public:
  RawEcho(std::size_t bytes, std::size_t message)
      : bytes_(bytes), message_(message), out_(bytes, 1), in_(bytes) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listener_, 1) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      Fail("cannot listen on loopback");
    }
    echo_ = std::thread([this] {
      const int fd = ::accept(listener_, nullptr, nullptr);
      std::vector<char> buf(bytes_);
      std::uint8_t more = 0;
      while (::recv(fd, &more, 1, MSG_WAITALL) == 1 && more) {
        ReadAll(fd, buf.data(), bytes_, message_);
        WriteAll(fd, buf.data(), bytes_, message_);
      }
      ::close(fd);
    });
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      Fail("cannot connect on loopback");
    }
  }
  ~RawEcho() {
    const std::uint8_t stop = 0;
    WriteAll(fd_, reinterpret_cast<const char*>(&stop), 1, 1);
    echo_.join();
    ::close(fd_);
    ::close(listener_);
  }
  void Round() {
    const std::uint8_t more = 1;
    WriteAll(fd_, reinterpret_cast<const char*>(&more), 1, 1);
    WriteAll(fd_, out_.data(), bytes_, message_);
    ReadAll(fd_, in_.data(), bytes_, message_);
  }

 private:
  std::size_t bytes_, message_;
  std::vector<char> out_, in_;
  int listener_ = -1, fd_ = -1;
  std::thread echo_;
};

// --- PS ---------------------------------------------------------------------------------------

// The trainer's default (TAAS_PS_LANES, taas/config/config.h).
constexpr int kTrainerLanes = 2;

// PS tasks of `lanes` lanes each (taas/ps/client.h), checking the job's tokens as in a job.
struct Cluster {
  std::vector<std::unique_ptr<taas::ps::PsServer>> servers;
  std::vector<std::string> addresses;
  int lanes = 1;
  taas::ps::PsTokens tokens;
};

Cluster StartCluster(int num_ps, int lanes, const taas::Logger& logger) {
  Cluster c;
  c.lanes = lanes;
  auto tokens = taas::ps::NewTokens();
  if (!tokens.ok()) Fail(std::string(tokens.status().message()));
  c.tokens = *tokens;
  for (int i = 0; i < num_ps; ++i) {
    auto s = taas::ps::PsServer::Start({"127.0.0.1:0", "", lanes, c.tokens, {}},
                                       1 + static_cast<std::uint64_t>(i), logger);
    if (!s.ok()) Fail(std::string(s.status().message()));
    c.addresses.push_back("127.0.0.1:" + std::to_string((*s)->port()));
    c.servers.push_back(std::move(*s));
  }
  return c;
}

// One variable of `bytes`, placed as the trainer places it (split over every PS and lane from
// 1 MB, TAAS_PARTITION_BYTES; whole on PS 0 below); each round pushes its gradient and pulls it
// back: a Push and a Pull, or (`one_call`) a Push whose reply carries the values, as the trainer
// does.
class PsRound {
 public:
  PsRound(const Cluster& cluster, std::size_t bytes, std::int64_t chunk_bytes, bool one_call,
          const taas::Logger& logger)
      : client_(cluster.addresses,
                {.chunk_bytes = chunk_bytes,
                 .lanes = cluster.lanes,
                 .tokens = cluster.tokens,
                 .caller = {},  // not a replica: never fenced
                 .limits = {},
                 .stalls = nullptr},
                logger),
        one_call_(one_call),
        n_(static_cast<std::int64_t>(bytes / sizeof(float))),
        value_(static_cast<std::size_t>(n_)),
        grad_(static_cast<std::size_t>(n_), 1.0f) {
    const int num_ps = client_.num_ps();
    placement_ = taas::ps::PlaceVariables({{"w", n_}}, num_ps, 1 << 20, cluster.lanes);
    taas::ps::TrainingSpec spec;
    spec.optimizer.learning_rate.initial = 0.0f;  // values stay put; the update still runs
    for (int ps = 0; ps < num_ps; ++ps) {
      std::vector<taas::ps::ShardState> shards;
      for (const auto& s : placement_[0].shards) {
        if (s.ps == ps) shards.push_back({s.name, std::vector<float>(std::size_t(s.size)), {}});
      }
      auto st = client_.Initialize(ps, spec, 0, std::move(shards), 60);
      if (!st.ok()) Fail(std::string(st.message()));
    }
    params_ = {{value_, grad_}};
    auto pulled = client_.Pull(placement_, params_, 60);
    if (!pulled.ok()) Fail(std::string(pulled.status().message()));
    steps_ = pulled->ps_steps;
  }
  void Round() {
    auto pushed = client_.Push(placement_, params_, steps_, 0, 60, one_call_);
    if (!pushed.ok()) Fail(std::string(pushed.status().message()));
    if (one_call_) {
      if (!pushed->pulled) Fail("the push reply carried no values");
      steps_ = pushed->pulled->ps_steps;
      return;
    }
    auto pulled = client_.Pull(placement_, params_, 60);
    if (!pulled.ok()) Fail(std::string(pulled.status().message()));
    steps_ = pulled->ps_steps;
  }

 private:
  taas::ps::PsClient client_;
  bool one_call_;
  std::int64_t n_;
  std::vector<float> value_, grad_;
  std::vector<taas::ps::VariablePlacement> placement_;
  std::vector<taas::ps::ParamBuffers> params_;
  std::vector<std::int64_t> steps_;
};

// Seconds per call of `f`, over enough calls to last ~`budget` seconds (at least one); the CPU
// seconds per call go to `cpu` when given.
double TimePerCall(const std::function<void()>& f, double budget, double* cpu = nullptr) {
  auto start = Clock::now();
  f();
  const double first = Seconds(start);
  const int calls = std::max(1, static_cast<int>(budget / std::max(first, 1e-6)));
  const double cpu_start = CpuSeconds();
  start = Clock::now();
  for (int i = 0; i < calls; ++i) f();
  const double secs = Seconds(start) / calls;
  if (cpu != nullptr) *cpu = (CpuSeconds() - cpu_start) / calls;
  return secs;
}

void TransportTable(int num_ps, int lanes, const std::vector<int>& sizes_mb, int reps,
                    std::int64_t chunk_bytes) {
  taas::Logger quiet(stderr, taas::LogLevel::kError);
  Cluster cluster = StartCluster(num_ps, lanes, quiet);
  std::printf(
      "PS push+pull vs raw loopback socket: %d PS of %d lanes, messages of %lld KiB, median of %d "
      "alternating runs\n",
      num_ps, lanes, static_cast<long long>(chunk_bytes >> 10), reps);
  std::printf("(PS: a Push then a Pull; 1-call: a Push whose reply carries the values)\n");
  std::printf("%5s %9s %8s %6s %12s %8s %6s %12s %8s %8s %8s\n", "MB", "raw GB/s", "PS GB/s",
              "ratio", "min-max", "1-call", "ratio", "min-max", "raw CPU", "PS CPU", "1-call");
  std::printf("%5s %9s %8s %6s %12s %8s %6s %12s %8s %8s %8s\n", "", "", "", "", "", "GB/s", "", "",
              "s/GB", "s/GB", "s/GB");
  for (int mb : sizes_mb) {
    const std::size_t bytes = static_cast<std::size_t>(mb) << 20;
    RawEcho raw(bytes, static_cast<std::size_t>(chunk_bytes));
    PsRound ps(cluster, bytes, chunk_bytes, /*one_call=*/false, quiet);
    PsRound fused(cluster, bytes, chunk_bytes, /*one_call=*/true, quiet);
    raw.Round();  // warm-up (connections, buffers, page faults)
    ps.Round();
    fused.Round();
    const double budget = 0.3;
    std::vector<double> raw_secs, ps_secs, fused_secs, ratios, fused_ratios, raw_cpu, ps_cpu,
        fused_cpu;
    for (int r = 0; r < reps; ++r) {
      double cpu = 0;
      raw_secs.push_back(TimePerCall([&] { raw.Round(); }, budget, &cpu));
      raw_cpu.push_back(cpu);
      ps_secs.push_back(TimePerCall([&] { ps.Round(); }, budget, &cpu));
      ps_cpu.push_back(cpu);
      fused_secs.push_back(TimePerCall([&] { fused.Round(); }, budget, &cpu));
      fused_cpu.push_back(cpu);
      ratios.push_back(raw_secs.back() / ps_secs.back());
      fused_ratios.push_back(raw_secs.back() / fused_secs.back());
    }
    // All move 2 x bytes per round (out and back).
    const double gb = 2.0 * static_cast<double>(bytes) / 1e9;
    const double raw_gbs = gb / Median(raw_secs);
    const double ps_gbs = gb / Median(ps_secs);
    const double fused_gbs = gb / Median(fused_secs);
    auto lo = [](const std::vector<double>& v) {
      return 100.0 * *std::min_element(v.begin(), v.end());
    };
    auto hi = [](const std::vector<double>& v) {
      return 100.0 * *std::max_element(v.begin(), v.end());
    };
    std::printf(
        "%5d %9.2f %8.2f %5.0f%% %5.0f%%-%4.0f%% %8.2f %5.0f%% %5.0f%%-%4.0f%% %8.2f %8.2f %8.2f\n",
        mb, raw_gbs, ps_gbs, 100.0 * ps_gbs / raw_gbs, lo(ratios), hi(ratios), fused_gbs,
        100.0 * fused_gbs / raw_gbs, lo(fused_ratios), hi(fused_ratios), Median(raw_cpu) / gb,
        Median(ps_cpu) / gb, Median(fused_cpu) / gb);
  }
}

void LatencyTable(int num_ps, int lanes, const std::vector<int>& sizes_kb, int reps,
                  std::int64_t chunk_bytes) {
  taas::Logger quiet(stderr, taas::LogLevel::kError);
  Cluster cluster = StartCluster(num_ps, lanes, quiet);
  std::printf("\nRound trip per step: %d PS of %d lanes, median of %d alternating runs\n", num_ps,
              lanes, reps);
  std::printf("%8s %16s %16s\n", "KB", "push+pull us", "1-call us");
  for (int kb : sizes_kb) {
    const std::size_t bytes = std::max<std::size_t>(sizeof(float), std::size_t(kb) << 10);
    PsRound ps(cluster, bytes, chunk_bytes, /*one_call=*/false, quiet);
    PsRound fused(cluster, bytes, chunk_bytes, /*one_call=*/true, quiet);
    std::vector<double> ps_secs, fused_secs;
    for (int r = 0; r < reps; ++r) {
      ps_secs.push_back(TimePerCall([&] { ps.Round(); }, 0.2));
      fused_secs.push_back(TimePerCall([&] { fused.Round(); }, 0.2));
    }
    std::printf("%8d %16.0f %16.0f\n", kb, 1e6 * Median(ps_secs), 1e6 * Median(fused_secs));
  }
}

// --- PS update against memory bandwidth --------------------------------------------------------

void UpdateTable(std::size_t floats, int reps) {
  std::vector<float> a(floats, 1.0f), b(floats, 2.0f), c(floats, 3.0f), d(floats, 0.0f);
  const double bytes = static_cast<double>(floats * sizeof(float));
  // STREAM-like kernels; bytes touched count each array read or written once.
  auto copy = [&] { std::memcpy(b.data(), a.data(), floats * sizeof(float)); };
  auto triad = [&] {
    float* __restrict x = a.data();
    const float* __restrict y = b.data();
    const float* __restrict z = c.data();
    for (std::size_t i = 0; i < floats; ++i) x[i] = y[i] + 0.5f * z[i];
  };
  std::printf(
      "\nPS update over %zu floats (%.0f MB) vs memory bandwidth (STREAM triad; memcpy "
      "for reference), alternating, median of %d\n",
      floats, bytes / 1e6, reps);
  std::printf("%-26s %7s %14s %12s %12s %8s %8s\n", "kernel", "arrays", "touched GB/s",
              "triad GB/s", "memcpy GB/s", "/triad", "/memcpy");
  auto row = [&](const char* name, int arrays, const std::function<void()>& kernel) {
    std::vector<double> rates, triads, copies, vs_triad, vs_copy;
    for (int r = 0; r < reps; ++r) {
      copies.push_back(2 * bytes / TimePerCall(copy, 0.1));
      triads.push_back(3 * bytes / TimePerCall(triad, 0.1));
      rates.push_back(arrays * bytes / TimePerCall(kernel, 0.1));
      vs_triad.push_back(rates.back() / triads.back());
      vs_copy.push_back(rates.back() / copies.back());
    }
    std::printf("%-26s %7d %14.2f %12.2f %12.2f %7.0f%% %7.0f%%\n", name, arrays,
                Median(rates) / 1e9, Median(triads) / 1e9, Median(copies) / 1e9,
                100.0 * Median(vs_triad), 100.0 * Median(vs_copy));
  };
  // Sync aggregation: the accumulator += one worker's gradient (ParameterStore::Push).
  row("sum (sync aggregation)", 3, [&] { taas::ps::Accumulate(d, a); });
  struct Opt {
    const char* label;
    const char* name;
    int arrays;  // gradient read, variable and each slot read and written
  };
  for (const Opt& o : {Opt{"sgd apply", "sgd", 3}, Opt{"momentum apply", "momentum", 5},
                       Opt{"adam apply", "adam", 7}}) {
    taas::optim::OptimizerConfig config;
    config.name = o.name;
    config.learning_rate.initial = 1e-6f;
    auto opt = taas::optim::CreateOptimizer(config);
    if (!opt.ok()) Fail(std::string(opt.status().message()));
    std::vector<std::vector<float>> slot_data(static_cast<std::size_t>((*opt)->slot_count()),
                                              std::vector<float>(floats, 0.0f));
    std::vector<std::span<float>> slots(slot_data.begin(), slot_data.end());
    std::int64_t step = 0;
    row(o.label, o.arrays, [&] { (*opt)->Apply("w", a, b, slots, step++); });
  }
}

std::vector<int> ParseSizes(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(std::atoi(item.c_str()));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int num_ps = 1, lanes = kTrainerLanes, reps = 5, update_mb = 128;
  std::int64_t chunk_kb = 4096;
  std::vector<int> sizes_mb = {1, 16, 128}, latency_kb = {0, 64, 375};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--ps") {
      num_ps = std::atoi(value().c_str());
    } else if (arg == "--lanes") {
      lanes = std::atoi(value().c_str());
    } else if (arg == "--sizes") {
      sizes_mb = ParseSizes(value());
    } else if (arg == "--reps") {
      reps = std::atoi(value().c_str());
    } else if (arg == "--chunk-kb") {
      chunk_kb = std::atoll(value().c_str());
    } else if (arg == "--latency-kb") {
      latency_kb = ParseSizes(value());
    } else if (arg == "--update-mb") {
      update_mb = std::atoi(value().c_str());
    } else {
      Fail(
          "usage: taas_ps_bench [--ps N] [--lanes L] [--sizes MB,MB,...] [--reps R] "
          "[--chunk-kb K] [--update-mb M] [--latency-kb KB,KB,...]");
    }
  }
  if (num_ps < 1 || lanes < 1 || reps < 1 || chunk_kb < 1 || update_mb < 0) {
    Fail("--ps, --lanes, --reps and --chunk-kb must be positive, --update-mb >= 0");
  }
  if (!sizes_mb.empty()) TransportTable(num_ps, lanes, sizes_mb, reps, chunk_kb << 10);
  if (!latency_kb.empty()) LatencyTable(num_ps, lanes, latency_kb, reps, chunk_kb << 10);
  if (update_mb > 0) UpdateTable((static_cast<std::size_t>(update_mb) << 20) / sizeof(float), reps);
  return 0;
}
