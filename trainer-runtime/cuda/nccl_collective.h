// The NCCL backend's private side: NCCL results as absl::Status, for the backend and the tools
// that call NCCL beside it (bench/gpu).
#pragma once

#include <nccl.h>

#include <string_view>

#include "taas/base/status.h"

namespace taas::cuda {

// OK for ncclSuccess; otherwise `what` failed with NCCL's own words (ncclGetErrorString, and
// ncclGetLastError's detail when there is one; `comm` may be null). A system or remote error
// (a peer or its connection lost) is Unavailable, so a restart can help; an invalid argument or
// usage is InvalidArgument; anything else (an unhandled CUDA error, an internal one) Internal.
// ncclInProgress is not an error of its own: callers of a non-blocking communicator poll it.
absl::Status NcclStatus(ncclResult_t result, ncclComm_t comm, std::string_view what);

}  // namespace taas::cuda
