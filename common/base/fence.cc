#include "taas/base/fence.h"

namespace taas {
namespace {

// Every fencing refusal says this, so that it is recognised after any prefix a caller adds.
constexpr std::string_view kFencedMarker = "is fenced: ";

}  // namespace

absl::Status CheckIncarnation(std::string_view replica, std::uint64_t highest, std::uint64_t got) {
  if (got >= highest) return absl::OkStatus();
  return absl::FailedPreconditionError(
      std::string(replica) + " incarnation " + std::to_string(got) + " " +
      std::string(kFencedMarker) + "incarnation " + std::to_string(highest) + " of " +
      std::string(replica) + " joined since (its pod or process was replaced; this one must stop)");
}

bool IsFenced(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition &&
         status.message().find(absl::string_view(kFencedMarker.data(), kFencedMarker.size())) !=
             absl::string_view::npos;
}

absl::Status IncarnationFence::Admit(const ReplicaIncarnation& who) {
  if (who.replica.empty() || who.replica.size() > kMaxFencedReplicaNameBytes) {
    return absl::InvalidArgumentError("a replica name of " + std::to_string(who.replica.size()) +
                                      " bytes; expected 1 to " +
                                      std::to_string(kMaxFencedReplicaNameBytes));
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = highest_.find(who.replica);
  if (it == highest_.end()) {
    if (highest_.size() >= kMaxFencedReplicas) {
      return absl::ResourceExhaustedError("more than " + std::to_string(kMaxFencedReplicas) +
                                          " replicas named themselves to this one; refusing " +
                                          who.replica);
    }
    highest_.emplace(who.replica, who.incarnation);
    return absl::OkStatus();
  }
  TAAS_RETURN_IF_ERROR(CheckIncarnation(who.replica, it->second, who.incarnation));
  it->second = who.incarnation;
  return absl::OkStatus();
}

std::uint64_t IncarnationFence::Highest(std::string_view replica) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = highest_.find(replica);
  return it == highest_.end() ? 0 : it->second;
}

}  // namespace taas
