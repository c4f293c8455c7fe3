#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "taas/http/client.h"
#include "taas/http/server.h"

namespace taas::http {
namespace {

using std::chrono::milliseconds;

// A connected loopback socket, closed when it goes.
class RawClient {
 public:
  explicit RawClient(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void Send(const std::string& bytes) {
    REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
  }
  // Everything the server sends until it closes, or what came within `deadline`.
  std::string ReadAll(milliseconds deadline = milliseconds(3000)) {
    std::string got;
    const auto until = std::chrono::steady_clock::now() + deadline;
    char buffer[4096];
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      got.append(buffer, static_cast<std::size_t>(n));
    }
    return got;
  }

 private:
  int fd_;
};

std::unique_ptr<Server> StartServer(ServerOptions options = {}) {
  options.host = "127.0.0.1";
  auto server = Server::Start(options, [](const Request& r) {
    if (r.path == "/echo") return Response{200, "text/plain", r.method + " " + r.query};
    if (r.path == "/big") return Response{200, "text/plain", std::string(2 << 20, 'x')};
    return Response{404, "text/plain", "not found\n"};
  });
  REQUIRE(server.ok());
  return std::move(*server);
}

std::string Address(const Server& server) { return "127.0.0.1:" + std::to_string(server.port()); }

TEST_CASE("a GET reaches the handler with its path and query; other answers are errors") {
  auto server = StartServer();
  auto body = Get(Address(*server), "/echo?a=1&b=%20");
  REQUIRE(body.ok());
  CHECK(*body == "GET a=1&b=%20");

  auto missing = Get(Address(*server), "/nothing");
  CHECK(missing.status().code() == absl::StatusCode::kUnavailable);
  CHECK(std::string(missing.status().message()).find("HTTP 404") != std::string::npos);
}

TEST_CASE("HEAD answers the length without the body") {
  auto server = StartServer();
  RawClient client(server->port());
  client.Send("HEAD /echo HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string answer = client.ReadAll();
  CHECK(answer.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(answer.find("Content-Length: 5") != std::string::npos);
  CHECK(answer.substr(answer.find("\r\n\r\n") + 4).empty());
}

TEST_CASE("hostile requests: bodies, other methods, oversized and malformed heads") {
  auto server = StartServer(ServerOptions{.max_header_bytes = 1024});
  auto answer_to = [&](const std::string& request) {
    RawClient client(server->port());
    client.Send(request);
    return client.ReadAll();
  };
  CHECK(
      answer_to("POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello").rfind("HTTP/1.1 413", 0) ==
      0);
  CHECK(answer_to("DELETE /echo HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0) == 0);
  CHECK(answer_to("GET /echo HTTP/1.1\r\nX: " + std::string(4096, 'a') + "\r\n\r\n")
            .rfind("HTTP/1.1 431", 0) == 0);
  CHECK(answer_to("GET\x01 / HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);
  // The server is still there for a well-formed request.
  CHECK(Get(Address(*server), "/echo").ok());
}

TEST_CASE("idle connections end at the deadline and cannot hold more than the limit") {
  auto server =
      StartServer(ServerOptions{.connection_deadline = milliseconds(500), .max_connections = 4});
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(std::make_unique<RawClient>(server->port()));
  // Give the server time to accept all four, then: the fifth is closed at once, unanswered.
  std::this_thread::sleep_for(milliseconds(100));
  {
    RawClient fifth(server->port());
    fifth.Send("GET /echo HTTP/1.1\r\n\r\n");
    CHECK(fifth.ReadAll(milliseconds(400)).empty());
  }
  // An idle connection is closed at its deadline, with nothing sent...
  const auto started = std::chrono::steady_clock::now();
  CHECK(idle[0]->ReadAll(milliseconds(3000)).empty());
  CHECK(std::chrono::steady_clock::now() - started < milliseconds(2000));
  // ...and then the server answers again.
  idle.clear();
  std::this_thread::sleep_for(milliseconds(100));
  CHECK(Get(Address(*server), "/echo").ok());
}

// A listening socket on a free loopback port that nothing accepts from: a connection completes
// (the backlog) but no answer ever comes.
class LoopbackListener {
 public:
  LoopbackListener() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(::listen(fd_, 4) == 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~LoopbackListener() { ::close(fd_); }
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  int fd() const { return fd_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_;
  int port_ = 0;
};

// A listener that answers its first connection with `answer`, whatever was asked (a hostile
// metrics endpoint).
class ScriptedEndpoint {
 public:
  explicit ScriptedEndpoint(std::string answer) {
    thread_ = std::thread([this, answer = std::move(answer)] {
      const int client = ::accept(listener_.fd(), nullptr, nullptr);
      if (client < 0) return;
      // Read the request first: closing with it unread would reset the connection.
      std::string request;
      char buffer[1024];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(client, buffer, sizeof(buffer), 0);
        if (n <= 0) break;
        request.append(buffer, static_cast<std::size_t>(n));
      }
      for (std::size_t sent = 0; sent < answer.size();) {
        const ssize_t n = ::send(client, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<std::size_t>(n);
      }
      ::close(client);
    });
  }
  ~ScriptedEndpoint() {
    ::shutdown(listener_.fd(), SHUT_RDWR);
    thread_.join();
  }
  std::string address() const { return listener_.address(); }

 private:
  LoopbackListener listener_;
  std::thread thread_;
};

TEST_CASE("Get bounds the answer's size and the time it waits") {
  auto server = StartServer();
  auto big = Get(Address(*server), "/big", GetOptions{.max_body_bytes = 1 << 20});
  CHECK(big.status().code() == absl::StatusCode::kUnavailable);
  CHECK(Get(Address(*server), "/big", GetOptions{.max_body_bytes = 4 << 20}).ok());

  // A listener that never accepts: the connection completes (backlog) but no answer comes.
  {
    LoopbackListener hung;
    const auto started = std::chrono::steady_clock::now();
    CHECK(
        Get(hung.address(), "/metrics", GetOptions{.timeout = milliseconds(300)}).status().code() ==
        absl::StatusCode::kDeadlineExceeded);
    CHECK(std::chrono::steady_clock::now() - started < milliseconds(1500));
  }

  CHECK(Get("no-port", "/").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Get("host:", "/").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Get("127.0.0.1:1", "/", GetOptions{.timeout = milliseconds(500)}).status().code() ==
        absl::StatusCode::kUnavailable);
}

TEST_CASE("Get refuses an oversized answer however its length is declared") {
  const GetOptions options{.timeout = milliseconds(3000), .max_body_bytes = 1000};
  const std::string huge(4000, 'x');
  {  // A declared length (Beast 1.74 alone would read this one whole).
    ScriptedEndpoint endpoint("HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n" + huge);
    CHECK(Get(endpoint.address(), "/metrics", options).status().code() ==
          absl::StatusCode::kUnavailable);
  }
  {  // Chunked.
    ScriptedEndpoint endpoint("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfa0\r\n" +
                              huge + "\r\n0\r\n\r\n");
    CHECK(Get(endpoint.address(), "/metrics", options).status().code() ==
          absl::StatusCode::kUnavailable);
  }
  {  // Until the connection closes.
    ScriptedEndpoint endpoint("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + huge);
    CHECK(Get(endpoint.address(), "/metrics", options).status().code() ==
          absl::StatusCode::kUnavailable);
  }
  {  // Within the cap it is read.
    ScriptedEndpoint endpoint("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nsmall");
    auto body = Get(endpoint.address(), "/metrics", options);
    REQUIRE_MESSAGE(body.ok(), body.status());
    CHECK(*body == "small");
  }
}

TEST_CASE("Start refuses a malformed host or port, and a port in use") {
  auto taken = StartServer();
  auto again = Server::Start(ServerOptions{.host = "127.0.0.1", .port = taken->port()},
                             [](const Request&) { return Response{}; });
  CHECK(again.status().code() == absl::StatusCode::kUnavailable);
  CHECK(Server::Start(ServerOptions{.host = "localhost"}, [](const Request&) { return Response{}; })
            .status()
            .code() == absl::StatusCode::kInvalidArgument);
  CHECK(Server::Start(ServerOptions{.host = "127.0.0.1", .port = 70000},
                      [](const Request&) { return Response{}; })
            .status()
            .code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace taas::http
