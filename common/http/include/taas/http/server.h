// A small HTTP/1.1 server on Boost.Beast for the plain endpoints every process has: health
// (/healthz, /readyz) and Prometheus metrics (/metrics). GET and HEAD of a handful of paths, one
// request per connection, small answers. The web UI's server (web-ui/server) is the one that
// streams, serves files and takes bodies; it is built on the same stack.
//
// Every client is hostile: a connection has one deadline for reading its request and writing the
// answer, the request head is bounded and a body is refused, and connections beyond a limit are
// closed at once, so slow or idle clients cannot keep a scraper or a kubelet probe out.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "taas/base/status.h"

namespace taas::http {

struct Request {
  std::string method;  // "GET" or "HEAD" (others are answered 405 before a handler sees them)
  std::string path;    // the target without its query: "/metrics"
  std::string query;   // what followed '?', undecoded ("" when none)
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Answers a request; called on the server's one thread, so it must not block for long.
using Handler = std::function<Response(const Request&)>;

// The Prometheus text exposition format's content type.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

struct ServerOptions {
  std::string host = "0.0.0.0";  // a numeric IPv4 or IPv6 address
  int port = 0;                  // 0 picks a free port (see Server::port())
  // Reading the request and writing the answer, together.
  std::chrono::milliseconds connection_deadline{std::chrono::seconds(5)};
  std::size_t max_header_bytes = 8 << 10;
  std::size_t max_connections = 32;  // open at once; more are closed when accepted
};

class Server {
 public:
  // Binds and starts serving on a thread of its own. Unavailable when the address cannot be bound
  // (a port still held by a previous process), InvalidArgument for a malformed host.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                                       Handler handler);
  ~Server();  // closes the listener and every connection, and joins the thread
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;

  class Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace taas::http
