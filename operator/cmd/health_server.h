// The operator's /healthz, /livez, /readyz and /metrics (Prometheus text), on the shared small
// HTTP server (taas/http/server.h: its own thread, deadlines and limits). The UI/API server is
// separate.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "taas/base/status.h"
#include "taas/http/server.h"

namespace taas::operator_cmd {

struct HealthHandlers {
  std::function<bool()> ready;           // /readyz: 200 when true, 503 otherwise
  std::function<std::string()> metrics;  // /metrics body
};

inline constexpr const char* kTextPlain = "text/plain; charset=utf-8";

// The answer to one request (pure: what the server calls).
http::Response AnswerHealth(const HealthHandlers& handlers, const http::Request& request);

// Binds `address:port` (port 0 picks a free one) and serves on a background thread until the
// returned server goes.
absl::StatusOr<std::unique_ptr<http::Server>> StartHealthServer(const std::string& address,
                                                                int port, HealthHandlers handlers);

}  // namespace taas::operator_cmd
