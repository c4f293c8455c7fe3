// The ring all-reduce across processes over TCP (the CPU backend of collective.h).
//
// Rank r keeps one persistent connection to each neighbour: it connects to rank r+1 and accepts
// rank r-1 (mod size), then closes its listener, so a process started later cannot join a ring
// already formed. All-reduce is reduce-scatter then all-gather (each rank sends and receives
// 2(size-1)/size of the buffer), in pieces of `chunk_bytes` that pipeline around the ring:
// a piece travels on as soon as it has been received and reduced. An all-reduce of at most
// 64 KiB, where a ring step's wake-ups cost more than its bytes, instead passes every rank's whole
// buffer around the ring (size-1 steps instead of 2(size-1)) and each rank adds them in rank
// order. Broadcast pipelines the same pieces along the ring from the root.
//
// Operations run one at a time in issue order on the ring's own thread, so the caller can issue
// the next bucket while one travels; one of at most 64 KiB with nothing queued before it runs on
// the caller's thread instead (handing it over and back costs more than its transfer).
//
// Every connection starts with a hello that names the sender's rank and the ring's size and
// proves the job's token; every operation starts with a header naming its sequence number, kind
// and length, so ranks that disagree about what they are doing fail with a message saying so
// instead of mixing bytes. A peer that closes its connection fails the operation at once
// (Unavailable, naming the peer); one that goes silent fails it after `timeout_secs`
// (DeadlineExceeded, naming what was awaited). After a failure every later operation fails too.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "taas/base/fence.h"
#include "taas/base/log.h"
#include "taas/base/stall_watch.h"
#include "taas/collective/collective.h"

namespace taas::collective {

struct TcpRingOptions {
  // host:port of every rank, in rank order (the chief first, then the workers, as TF_CONFIG lists
  // them). This rank listens on the port of addresses[rank].
  std::vector<std::string> addresses;
  int rank = 0;
  // Where this rank's listener binds: "0.0.0.0" in a pod, "127.0.0.1" for a local run.
  std::string bind_host = "0.0.0.0";
  // The job's token (hex text, taas/contract/job_secret.h); a peer must prove the same one.
  std::string token;
  // This rank's replica incarnation (taas/base/fence.h), named in its hellos; a neighbour of an
  // older incarnation than one this rank has seen of it while forming the ring is refused.
  std::uint64_t incarnation = 0;
  // Longest wait for anything: forming the ring (peers start in any order) and any operation's
  // progress (no byte moving for this long fails it).
  double timeout_secs = 600;
  // Piece size of the pipeline.
  std::int64_t chunk_bytes = std::int64_t{1} << 20;
  // Where forming the ring and an operation's wait for a neighbour are reported, naming the rank
  // awaited by peer_names[rank] ("worker-1"; "rank 1" without names); not owned, may be null.
  StallWatch* stalls = nullptr;
  std::vector<std::string> peer_names;
  // When given and true, forming the ring stops within a quarter of a second, Cancelled (the
  // replica is terminating: docs/trainer-runtime.md, "Faults").
  std::function<bool()> stopped;
};

// The name of `rank` in the stall lines: options.peer_names[rank], else "rank N".
std::string RingPeerName(const TcpRingOptions& options, int rank);

// Forms the ring: listens, connects to the next rank (retrying until it answers), accepts the
// previous one, and checks both hellos. A ring of size 1 needs no connection.
absl::StatusOr<std::unique_ptr<Collective>> ConnectTcpRing(const TcpRingOptions& options,
                                                           const Logger& logger);

}  // namespace taas::collective
