#include "taas/metrics/metrics.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace taas::metrics {
namespace {

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  return fd;
}

std::string Get(int port) {
  const int fd = Connect(port);
  const std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size()));
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

TEST_CASE("serves gauges in Prometheus text format over HTTP") {
  Gauges gauges;
  gauges.Describe("taas_global_step", "Global training step");
  gauges.Describe("taas_eval_accuracy", "Accuracy of the last evaluation");
  gauges.Set("taas_global_step", 1234);
  gauges.Set("taas_loss", 0.25);
  auto server = MetricsServer::Start("127.0.0.1", 0, &gauges);
  REQUIRE(server.ok());
  const std::string response = Get((*server)->port());
  CHECK(response.rfind("HTTP/1.1 200 OK", 0) == 0);
  CHECK(response.find("# HELP taas_global_step Global training step\n"
                      "# TYPE taas_global_step gauge\ntaas_global_step 1234\n") !=
        std::string::npos);
  CHECK(response.find("taas_loss 0.25\n") != std::string::npos);
  CHECK(response.find("taas_eval_accuracy") == std::string::npos);  // not set yet
  gauges.Set("taas_eval_accuracy", 0.5);
  CHECK(Get((*server)->port()).find("taas_eval_accuracy 0.5\n") != std::string::npos);
}

TEST_CASE("an info metric: one sample of 1 per distinct label set, label values escaped") {
  Gauges gauges;
  gauges.SetInfo("taas_replica_device_info", "A model replica's device",
                 {{{"device", "cuda:0"}, {"name", "NVIDIA \"H100\"\\x\n"}},
                  {{"device", "cpu"}, {"name", ""}},
                  {{"device", "cpu"}, {"name", ""}}});
  const std::string text = gauges.Render();
  CHECK(text ==
        "# HELP taas_replica_device_info A model replica's device\n"
        "# TYPE taas_replica_device_info gauge\n"
        "taas_replica_device_info{device=\"cuda:0\",name=\"NVIDIA \\\"H100\\\"\\\\x\\n\"} 1\n"
        "taas_replica_device_info{device=\"cpu\",name=\"\"} 1\n");
  gauges.SetInfo("taas_replica_device_info", "", {{{"device", "cpu"}}});
  CHECK(gauges.Render() ==
        "# TYPE taas_replica_device_info gauge\ntaas_replica_device_info{device=\"cpu\"} 1\n");
}

TEST_CASE("a labelled gauge: one sample per label set, the first of equal sets, replaced whole") {
  Gauges gauges;
  gauges.SetLabeled("taas_final_metric", "The job's final metrics",
                    {{{{"metric", "accuracy"}}, 0.9087},
                     {{{"metric", "loss"}}, 0.25},
                     {{{"metric", "accuracy"}}, 0.5}});
  CHECK(gauges.Render() ==
        "# HELP taas_final_metric The job's final metrics\n"
        "# TYPE taas_final_metric gauge\n"
        "taas_final_metric{metric=\"accuracy\"} 0.9087\n"
        "taas_final_metric{metric=\"loss\"} 0.25\n");
  gauges.SetLabeled("taas_final_metric", "", {});
  CHECK(gauges.Render() == "# TYPE taas_final_metric gauge\n");
}

TEST_CASE("a counter is served with TYPE counter, a gauge beside it with TYPE gauge") {
  Gauges gauges;
  gauges.DescribeCounter("taas_stalled_seconds_total", "Seconds stalled");
  gauges.Describe("taas_loss", "Loss");
  CHECK(gauges.Render().empty());  // neither set yet
  gauges.Set("taas_stalled_seconds_total", 2.5);
  gauges.Set("taas_loss", 0.25);
  CHECK(gauges.Render() ==
        "# HELP taas_loss Loss\n# TYPE taas_loss gauge\ntaas_loss 0.25\n"
        "# HELP taas_stalled_seconds_total Seconds stalled\n"
        "# TYPE taas_stalled_seconds_total counter\ntaas_stalled_seconds_total 2.5\n");
}

TEST_CASE("a client sending its request slowly holds the server for the deadline at most") {
  Gauges gauges;
  gauges.Set("taas_global_step", 7);
  auto server = MetricsServer::Start("127.0.0.1", 0, &gauges);
  REQUIRE(server.ok());
  const int port = (*server)->port();
  std::atomic<bool> done{false};
  // One byte every 200 ms for 8 s: each byte arrives well within any per-read timeout.
  std::thread slow([&] {
    const int fd = Connect(port);
    for (int i = 0; i < 40 && !done; ++i) {
      if (::send(fd, "G", 1, MSG_NOSIGNAL) != 1) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ::close(fd);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = std::chrono::steady_clock::now();
  const std::string response = Get(port);
  const auto waited = std::chrono::steady_clock::now() - start;
  done = true;
  slow.join();
  CHECK(response.find("taas_global_step 7") != std::string::npos);
  CHECK(waited < MetricsServer::kConnectionDeadline + std::chrono::milliseconds(1500));
}

}  // namespace
}  // namespace taas::metrics
