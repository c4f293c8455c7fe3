// Who may call a parameter server, and how much one call may make it hold (taas/contract/
// job_secret.h names the tokens). Shared by the PS service (server.h) and its client (client.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "taas/base/status.h"

namespace taas::ps {

// The job's secrets as a replica holds them (hex text, taas::contract::kTokenBytes of randomness).
// Every call carries `job`; Initialize, Snapshot and Shutdown carry `chief` too. A worker has no
// chief token (empty): the PS answers its chief-only calls PERMISSION_DENIED.
struct PsTokens {
  std::string job;
  std::string chief;
};

// Fresh job and chief tokens from /dev/urandom, for a process that runs its own PS (a run without
// TF_CONFIG): nobody else learns them, so nobody else can call that PS.
absl::StatusOr<PsTokens> NewTokens();

// What one call may make a PS (or a client) receive or wait for.
struct PsLimits {
  // A PushHeader, a PullRequest or a reply header: control data, never tensors.
  std::int64_t max_header_bytes = 1 << 20;
  // One gRPC message. Initialize and Snapshot carry a lane's whole shards with their optimizer
  // slots in one message, so this bounds the model too (per lane); pushes and pulls travel in
  // pieces of ~4 MB.
  std::int64_t max_message_bytes = std::int64_t{1} << 30;
  // How long a PS waits for a Push or Pull request to arrive in full once the call started (a
  // stalled peer is answered DEADLINE_EXCEEDED). A sync push's wait for the other replicas comes
  // after and is not counted here.
  double read_timeout_secs = 600;
};

}  // namespace taas::ps
