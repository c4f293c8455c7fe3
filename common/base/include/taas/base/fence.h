// Fencing older incarnations of a replica. A replica's pod (or, under `taas run`, its process) is
// created again when it is replaced: a node that failed, a restart. Each (re)creation gets a higher
// incarnation number (TAAS_REPLICA_INCARNATION, taas/contract/env.h), and every connection a
// replica makes names it. A peer keeps the highest incarnation it has seen of each replica and
// refuses an older one: a pod on a node that was only cut off, still running beside its
// replacement, is refused by every PS, ring neighbour and chief it reaches, and exits (fenced)
// instead of training beside it. Incarnation 0 is "unknown" (a replica started by hand): it is
// refused only once a numbered incarnation of the same replica was seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "taas/base/status.h"

namespace taas {

// Who is calling: the replica's name as the stall lines name a peer ("worker-1", "ps-0") and its
// incarnation. One value, the same in every handshake (PS metadata, the ring's hello).
struct ReplicaIncarnation {
  std::string replica;
  std::uint64_t incarnation = 0;
};

// Bounds on what a peer may make a fence hold: a replica name is a TFJob replica type and index.
inline constexpr std::size_t kMaxFencedReplicaNameBytes = 128;
inline constexpr std::size_t kMaxFencedReplicas = 4096;

// The decision, pure: OK when `got` may proceed given the highest incarnation `highest` already
// admitted of `replica`; FailedPrecondition naming the replica and both incarnations otherwise,
// recognised by IsFenced.
absl::Status CheckIncarnation(std::string_view replica, std::uint64_t highest, std::uint64_t got);

// Whether `status` is a fencing refusal (CheckIncarnation's), whatever context a caller added to
// its message on the way (a gRPC status converted back, a ring error).
bool IsFenced(const absl::Status& status);

// The highest incarnation admitted per replica. Thread-safe; holds at most kMaxFencedReplicas.
class IncarnationFence {
 public:
  // Admits `who` (and remembers its incarnation when it is the highest so far) unless a newer
  // incarnation of the same replica was admitted before. InvalidArgument for a name that is empty
  // or longer than kMaxFencedReplicaNameBytes, ResourceExhausted for a new replica past
  // kMaxFencedReplicas.
  absl::Status Admit(const ReplicaIncarnation& who);
  // The highest incarnation admitted of `replica`; 0 when none was.
  std::uint64_t Highest(std::string_view replica) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::uint64_t, std::less<>> highest_;  // guarded by mu_
};

}  // namespace taas
