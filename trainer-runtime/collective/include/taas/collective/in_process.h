// Several model replicas inside one worker (MirroredStrategy's replicas, the book's towers): a
// group whose members are threads of this process, each holding its own model instance.
//
// All-reduce sums the members' buffers in member order (each member reduces a slice, so the work
// is shared), then, when the group has a `cross` collective (the ring across workers), member 0
// all-reduces that sum across workers, and every member copies the result. A mean divides by the
// members of the whole job (members here x workers), so K replicas with batch B/K each update
// like one replica with batch B.
//
// Operations of a member complete before its call returns (the Handle is already finished): the
// members of one worker meet at every operation anyway, and a worker's traffic across workers is
// member 0's, one operation at a time.
#pragma once

#include <memory>
#include <vector>

#include "taas/collective/collective.h"

namespace taas::collective {

struct InProcessOptions {
  int members = 1;
  // The collective across workers that member 0 joins; null for a single worker. Its rank and
  // size make the group's: member m of worker w is rank w * members + m.
  std::unique_ptr<Collective> cross;
  // Longest a member waits for the others (or for the cross collective) in one operation.
  double timeout_secs = 600;
};

class InProcessGroup {
 public:
  static absl::StatusOr<std::unique_ptr<InProcessGroup>> Create(InProcessOptions options);
  virtual ~InProcessGroup() = default;

  // Member m's view; each member uses its own from its own thread.
  virtual Collective& member(int m) = 0;
  virtual int members() const = 0;

  // Fails every waiting and later operation with `status`: a member that cannot go on (its
  // train() failed) releases the others at once instead of leaving them to time out.
  virtual void Abort(const absl::Status& status) = 0;
};

}  // namespace taas::collective
