// Parsing of what a peer sends on the raw-framed data path (ps.proto, top of the file) and of the
// call's credentials (private to this folder). Every size read from the wire is checked against
// the bytes that actually arrived and against PsLimits before anything is allocated; errors are
// gRPC statuses ready to answer the call with, naming what was wrong.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>

#include "ps.pb.h"
#include "rpc_util.h"
#include "taas/base/fence.h"
#include "taas/ps/auth.h"

namespace taas::ps {

// Whether a call may proceed: OK; UNAUTHENTICATED without the job token (missing or wrong);
// PERMISSION_DENIED when `chief_only` and the chief token is missing or wrong. Tokens compare in
// constant time. Then the caller's replica and incarnation (taas/contract/job_secret.h's metadata)
// pass `fence`: FAILED_PRECONDITION (taas::IsFenced) for an older incarnation of a replica than one
// admitted before, INVALID_ARGUMENT for an incarnation that is no decimal number or a name the
// fence cannot hold; a call that names no replica is not fenced.
grpc::Status Authorize(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                       const PsTokens& tokens, bool chief_only, IncarnationFence& fence);

// Reads a 4-byte little-endian length N and N bytes of `message` (`what` names it in errors): a
// Push's header (the store checks its shards and sizes) or a reply's header.
grpc::Status ParseLengthPrefixed(BufferReader& reader, std::int64_t max_bytes, const char* what,
                                 google::protobuf::MessageLite* message);

// A Pull request (the whole message), checked (offsets and counts >= 0).
grpc::Status ParsePullRequest(const grpc::ByteBuffer& buffer, const PsLimits& limits,
                              rpc::PullRequest* request);

// OUT_OF_RANGE unless elements [offset, offset + count) lie inside a shard of `shard_size`
// elements (no overflow for any int64 offset and count).
grpc::Status CheckRange(const rpc::Range& range, std::size_t shard_size);

}  // namespace taas::ps
