// Push+pull throughput through one parameter server over gRPC on loopback, against a raw
// single-stream loopback TCP socket moving the same bytes both ways with 4 MiB writes, measured
// in the same run. Usage: taas_ps_bench [MB...] (default 1 16 128).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "taas/ps/client.h"
#include "taas/ps/server.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kChunk = 4 << 20;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void WriteAll(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, std::min(n, kChunk), 0);
    if (w <= 0) std::abort();
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void ReadAll(int fd, char* p, std::size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, std::min(n, kChunk), 0);
    if (r <= 0) std::abort();
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

// Seconds per round trip of `bytes` out and `bytes` back over one loopback TCP connection.
double RawSocket(std::size_t bytes, int rounds) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::listen(listener, 1);
  socklen_t len = sizeof(addr);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::thread server([&] {
    int fd = ::accept(listener, nullptr, nullptr);
    std::vector<char> buf(bytes);
    for (int r = 0; r < rounds + 1; ++r) {
      ReadAll(fd, buf.data(), bytes);
      WriteAll(fd, buf.data(), bytes);
    }
    ::close(fd);
  });
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) std::abort();
  std::vector<char> out(bytes, 1), in(bytes);
  WriteAll(fd, out.data(), bytes);  // warm-up
  ReadAll(fd, in.data(), bytes);
  auto start = Clock::now();
  for (int r = 0; r < rounds; ++r) {
    WriteAll(fd, out.data(), bytes);
    ReadAll(fd, in.data(), bytes);
  }
  double secs = Seconds(start) / rounds;
  ::close(fd);
  server.join();
  ::close(listener);
  return secs;
}

// Seconds per push+pull of `bytes` of parameters through one PS (async SGD applied on push).
double PushPull(std::size_t bytes, int rounds, double* update_secs) {
  taas::Logger quiet(stderr, taas::LogLevel::kError);
  auto server = taas::ps::PsServer::Start("127.0.0.1:0", 1, quiet);
  if (!server.ok()) std::abort();
  const std::string address = "127.0.0.1:" + std::to_string((*server)->port());
  taas::ps::PsClient client({address}, quiet);
  const auto n = static_cast<std::int64_t>(bytes / sizeof(float));
  auto placement = taas::ps::PlaceVariables({{"w", n}}, 1, 1LL << 40);
  taas::ps::TrainingSpec spec;
  spec.optimizer.learning_rate.initial = 0.0f;
  if (!client
           .Initialize(0, spec, 0, {{"w", std::vector<float>(static_cast<std::size_t>(n)), {}}}, 60)
           .ok()) {
    std::abort();
  }
  std::vector<float> value(static_cast<std::size_t>(n)), grad(static_cast<std::size_t>(n), 1.0f);
  std::vector<taas::ps::ParamBuffers> params = {{value, grad}};
  auto pulled = client.Pull(placement, params, 60);  // warm-up
  if (!pulled.ok()) std::abort();
  auto start = Clock::now();
  for (int r = 0; r < rounds; ++r) {
    auto pushed = client.Push(placement, params, pulled->ps_steps, 0, 60);
    pulled = client.Pull(placement, params, 60);
    if (!pushed.ok() || !pulled.ok()) std::abort();
  }
  double secs = Seconds(start) / rounds;
  // The PS's own update, alone: the optimizer over the same bytes in this process.
  taas::ps::ParameterStore store(2);
  if (!store.Initialize(spec, {{"w", std::vector<float>(static_cast<std::size_t>(n)), {}}}, 0)
           .ok()) {
    std::abort();
  }
  auto ustart = Clock::now();
  for (int r = 0; r < rounds; ++r) {
    store.Push(r, {{"w", grad}}, [](absl::StatusOr<taas::ps::PushResult>) {});
  }
  *update_secs = Seconds(ustart) / rounds;
  return secs;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes_mb;
  for (int i = 1; i < argc; ++i) sizes_mb.push_back(std::atoi(argv[i]));
  if (sizes_mb.empty()) sizes_mb = {1, 16, 128};
  std::printf("%8s %14s %14s %8s %16s\n", "MB", "ps GB/s", "raw GB/s", "ratio", "update GB/s");
  for (int mb : sizes_mb) {
    const std::size_t bytes = static_cast<std::size_t>(mb) << 20;
    const int rounds = mb >= 64 ? 5 : mb >= 16 ? 20 : 100;
    double update = 0;
    const double ps = PushPull(bytes, rounds, &update);
    const double raw = RawSocket(bytes, rounds);
    // Both move 2 x bytes per round (out and back).
    std::printf("%8d %14.2f %14.2f %7.0f%% %16.2f\n", mb, 2.0 * bytes / ps / 1e9,
                2.0 * bytes / raw / 1e9, 100.0 * raw / ps, bytes / update / 1e9);
  }
  return 0;
}
