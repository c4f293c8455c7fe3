#include "health_server.h"

namespace taas::operator_cmd {

http::Response AnswerHealth(const HealthHandlers& handlers, const http::Request& request) {
  if (request.path == "/healthz" || request.path == "/livez") return {200, kTextPlain, "ok\n"};
  if (request.path == "/readyz") {
    const bool ready = handlers.ready ? handlers.ready() : true;
    return {ready ? 200 : 503, kTextPlain, ready ? "ok\n" : "not ready\n"};
  }
  if (request.path == "/metrics") {
    return {200, std::string(http::kPrometheusContentType),
            handlers.metrics ? handlers.metrics() : ""};
  }
  return {404, kTextPlain, "not found\n"};
}

absl::StatusOr<std::unique_ptr<http::Server>> StartHealthServer(const std::string& address,
                                                                int port, HealthHandlers handlers) {
  http::ServerOptions options;
  options.host = address;
  options.port = port;
  return http::Server::Start(options, [handlers = std::move(handlers)](const http::Request& r) {
    return AnswerHealth(handlers, r);
  });
}

}  // namespace taas::operator_cmd
