// The parameter-server process's gRPC service (callback API) around a ParameterStore.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "taas/base/log.h"
#include "taas/base/status.h"
#include "taas/ps/auth.h"
#include "taas/ps/store.h"

namespace taas::ps {

struct PsServerOptions {
  std::string address;  // This PS's "host:port" from TF_CONFIG; port 0 picks a free one.
  std::string pod_ip;   // The pod's own IP (taas::contract::kPodIpEnv), "" when unknown.
  int lanes = 1;        // Stores served, each over its own connection (see client.h).
  PsTokens tokens;      // Both required: the job token and the chief token.
  PsLimits limits;
};

// Where a PS listens, and a warning line when that is every interface.
struct BindChoice {
  std::string listen;   // "host:port" for gRPC ("[v6]:port" for IPv6).
  std::string warning;  // Non-empty when binding 0.0.0.0: says why and how to avoid it.
};

// The pod IP when set (InvalidArgument unless it is an IPv4 or IPv6 address); else the TF_CONFIG
// host when it is an IP literal (127.0.0.1 stays on loopback); else 0.0.0.0 with a warning (a
// service name resolves to the pod's address only through the cluster's DNS).
absl::StatusOr<BindChoice> ChooseBindHost(const std::string& address, const std::string& pod_ip);

// The chief's word that it saved the job's state at `step`, and when it came (steady clock).
struct SavedCheckpoint {
  std::int64_t step = 0;
  std::chrono::steady_clock::time_point at;
};

class PsServer {
 public:
  // Listens where ChooseBindHost says. Every call must carry the job token (else
  // UNAUTHENTICATED); Initialize, Snapshot and Shutdown the chief token too (else
  // PERMISSION_DENIED). Serves `options.lanes` stores, all with this incarnation.
  static absl::StatusOr<std::unique_ptr<PsServer>> Start(const PsServerOptions& options,
                                                         std::uint64_t incarnation,
                                                         const Logger& logger);
  ~PsServer();
  PsServer(const PsServer&) = delete;
  PsServer& operator=(const PsServer&) = delete;

  int port() const { return port_; }
  int lanes() const { return static_cast<int>(stores_.size()); }
  ParameterStore& store(int lane = 0) { return *stores_.at(static_cast<std::size_t>(lane)); }

  // Blocks until Shutdown RPCs asked every lane to exit; false on timeout (seconds, <0 = none).
  bool WaitForExitRequest(double timeout_secs);

  // What the chief's last CheckpointSaved call said (it saved the job's state), if one came; for
  // a PS that is terminating and serves until that save is done.
  std::optional<SavedCheckpoint> LastSavedCheckpoint() const;

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
