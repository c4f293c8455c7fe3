#include "taas/metrics/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>

namespace taas::metrics {

void Gauges::Describe(std::string_view name, std::string_view help) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& g = gauges_[std::string(name)];
  g.first = help;
  g.second = std::nan("");
}

void Gauges::Set(std::string_view name, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  gauges_[std::string(name)].second = value;
}

std::string Gauges::Render() const {
  std::ostringstream out;
  out.precision(10);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, g] : gauges_) {
    if (std::isnan(g.second)) continue;  // never set yet
    if (!g.first.empty()) out << "# HELP " << name << " " << g.first << "\n";
    out << "# TYPE " << name << " gauge\n" << name << " " << g.second << "\n";
  }
  return out.str();
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& host,
                                                                    int port,
                                                                    const Gauges* gauges) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    ::close(fd);
    return absl::InvalidArgumentError("metrics host " + host + " is not an IPv4 address");
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 16) != 0) {
    const std::string error = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError("metrics endpoint cannot listen on " + host + ":" +
                                  std::to_string(port) + ": " + error);
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->gauges_ = gauges;
  server->fd_ = fd;
  server->port_ = ntohs(addr.sin_port);
  server->thread_ = std::thread([s = server.get()] { s->Serve(); });
  return server;
}

MetricsServer::~MetricsServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// Milliseconds left until `deadline`, at least 0.
int RemainingMs(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<std::int64_t>(left.count(), 0));
}

// Waits for `events` on `fd` until `deadline`; false when it passed first.
bool WaitFor(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, RemainingMs(deadline)) > 0;
}

}  // namespace

void MetricsServer::Serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) continue;
    // One connection at a time, so each gets a deadline for all of its reading and writing: a
    // client that sends or reads slowly cannot keep the scraper out for longer.
    const auto deadline = std::chrono::steady_clock::now() + kConnectionDeadline;
    char buffer[2048];
    std::string request;
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384 &&
           WaitFor(client, POLLIN, deadline)) {
      ssize_t n = ::recv(client, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      request.append(buffer, static_cast<std::size_t>(n));
    }
    const std::string body = gauges_->Render();
    const std::string response =
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    std::size_t sent = 0;
    while (sent < response.size() && WaitFor(client, POLLOUT, deadline)) {
      ssize_t n = ::send(client, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    ::close(client);
  }
}

}  // namespace taas::metrics
