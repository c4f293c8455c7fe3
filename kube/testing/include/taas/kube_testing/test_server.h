// TestServer: a tiny loopback HTTP/1.1 server on plain sockets for client and informer tests.
// Each request is answered by `respond(request head [+ "\n" + body])` with a list of raw writes;
// the pseudo-writes "CLOSE" (close the connection) and "SLEEPms" (pause) script failures.
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace taas::kube::testing {

// Serves each accepted connection with `respond(request_head)` -> list of raw writes.
class TestServer {
 public:
  using Responder = std::function<std::vector<std::string>(const std::string&)>;
  explicit TestServer(Responder respond) : respond_(std::move(respond)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~TestServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    for (auto& t : conns_) t.join();
  }
  int port() const { return port_; }
  int connections() const { return accepted_.load(); }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Loop() {
    while (!stop_) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      accepted_.fetch_add(1);
      conns_.emplace_back([this, c] { Serve(c); });
    }
  }
  void Serve(int c) {
    std::string buf;
    char tmp[4096];
    for (;;) {
      auto end = buf.find("\r\n\r\n");
      while (end == std::string::npos) {
        ssize_t n = ::read(c, tmp, sizeof(tmp));
        if (n <= 0) {
          ::close(c);
          return;
        }
        buf.append(tmp, static_cast<std::size_t>(n));
        end = buf.find("\r\n\r\n");
      }
      std::string head = buf.substr(0, end);
      buf.erase(0, end + 4);
      // Bodies in these tests are small and declared with Content-Length.
      auto cl = head.find("Content-Length: ");
      if (cl != std::string::npos) {
        std::size_t n = std::stoul(head.substr(cl + 16));
        while (buf.size() < n) {
          ssize_t r = ::read(c, tmp, sizeof(tmp));
          if (r <= 0) break;
          buf.append(tmp, static_cast<std::size_t>(r));
        }
        head += "\n" + buf.substr(0, n);
        buf.erase(0, n);
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(head);
      }
      for (const auto& part : respond_(head)) {
        if (part == "CLOSE") {
          ::close(c);
          return;
        }
        if (part.rfind("SLEEP", 0) == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(part.substr(5))));
          continue;
        }
        if (::write(c, part.data(), part.size()) < 0) break;
      }
    }
  }
  Responder respond_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
  std::vector<std::thread> conns_;
  std::mutex mu_;
  std::vector<std::string> requests_;
};

inline std::string Response(int code, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(code) +
         " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

inline std::string Chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return size + data + "\r\n";
}

}  // namespace taas::kube::testing
