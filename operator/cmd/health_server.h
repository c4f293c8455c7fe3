// A minimal HTTP listener for /healthz, /readyz and /metrics (Prometheus text). Loopback or any
// address; one thread; one request per connection. The UI/API server is separate.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "taas/base/status.h"

namespace taas::operator_cmd {

struct HealthHandlers {
  std::function<bool()> ready;           // /readyz: 200 when true, 503 otherwise
  std::function<std::string()> metrics;  // /metrics body
};

class HealthServer {
 public:
  // Binds `address:port` (port 0 picks a free one) and serves on a background thread.
  static absl::StatusOr<std::unique_ptr<HealthServer>> Start(const std::string& address, int port,
                                                             HealthHandlers handlers);
  ~HealthServer();  // stops
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;
  int port() const;

  class Impl;

 private:
  explicit HealthServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace taas::operator_cmd
