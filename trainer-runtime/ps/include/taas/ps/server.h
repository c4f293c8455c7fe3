// The parameter-server process's gRPC service (callback API) around a ParameterStore.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "taas/base/log.h"
#include "taas/base/status.h"
#include "taas/ps/store.h"

namespace taas::ps {

class PsServer {
 public:
  // Listens on `address` ("host:port"). A numeric IPv4 host is bound as given (127.0.0.1 stays on
  // loopback); a name (a Kubernetes service) means every interface. Port 0 picks a free one.
  // Serves `lanes` stores, all with this incarnation (lanes: see client.h).
  static absl::StatusOr<std::unique_ptr<PsServer>> Start(const std::string& address,
                                                         std::uint64_t incarnation,
                                                         const Logger& logger, int lanes = 1);
  ~PsServer();
  PsServer(const PsServer&) = delete;
  PsServer& operator=(const PsServer&) = delete;

  int port() const { return port_; }
  int lanes() const { return static_cast<int>(stores_.size()); }
  ParameterStore& store(int lane = 0) { return *stores_.at(static_cast<std::size_t>(lane)); }

  // Blocks until Shutdown RPCs asked every lane to exit; false on timeout (seconds, <0 = none).
  bool WaitForExitRequest(double timeout_secs);

  // Stops serving (in-flight calls get a short grace).
  void Stop();

  struct Impl;

 private:
  PsServer() = default;

  std::vector<std::unique_ptr<ParameterStore>> stores_;  // One per lane.
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace taas::ps
