#include "wire.h"

#include <charconv>
#include <string_view>

#include "taas/base/random_token.h"
#include "taas/contract/job_secret.h"

namespace taas::ps {
namespace {

grpc::Status Invalid(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

// The value of metadata `key` (the first, if sent twice), empty when absent.
std::string_view Metadata(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                          std::string_view key) {
  auto it = metadata.find(grpc::string_ref(key.data(), key.size()));
  if (it == metadata.end()) return {};
  return std::string_view(it->second.data(), it->second.size());
}

// Parses `size` bytes of `reader` as `message`, `size` already checked against what arrived.
grpc::Status ParseBytes(BufferReader& reader, std::size_t size, const char* what,
                        google::protobuf::MessageLite* message) {
  std::string bytes(size, '\0');
  if (!reader.Read(bytes.data(), bytes.size()) || !message->ParseFromString(bytes)) {
    return Invalid(std::string("malformed ") + what);
  }
  return grpc::Status::OK;
}

grpc::Status CheckSize(std::uint64_t size, std::size_t arrived, std::int64_t max_bytes,
                       const char* what) {
  if (size > static_cast<std::uint64_t>(max_bytes)) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        std::string(what) + " of " + std::to_string(size) +
                            " bytes exceeds the limit of " + std::to_string(max_bytes));
  }
  if (size > arrived) {
    return Invalid(std::string(what) + " claims " + std::to_string(size) + " bytes, " +
                   std::to_string(arrived) + " arrived");
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status Authorize(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                       const PsTokens& tokens, bool chief_only, IncarnationFence& fence) {
  // An unset token on this side (a misconfigured PS) must not match an absent one.
  const std::string_view job = Metadata(metadata, contract::kJobTokenMetadata);
  if (tokens.job.empty() || !ConstantTimeEqual(job, tokens.job)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        job.empty() ? "no job token: every call to a PS carries the job's token"
                                    : "wrong job token: the caller is not part of this job");
  }
  if (chief_only) {
    const std::string_view chief = Metadata(metadata, contract::kChiefTokenMetadata);
    if (tokens.chief.empty() || !ConstantTimeEqual(chief, tokens.chief)) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "only the chief may initialise, snapshot or stop a PS (chief token " +
                              std::string(chief.empty() ? "missing" : "wrong") + ")");
    }
  }
  const std::string_view replica = Metadata(metadata, contract::kReplicaMetadata);
  if (replica.empty()) return grpc::Status::OK;
  const std::string_view text = Metadata(metadata, contract::kReplicaIncarnationMetadata);
  ReplicaIncarnation caller{std::string(replica), 0};
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), caller.incarnation);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return Invalid(std::string(contract::kReplicaIncarnationMetadata) + ": \"" +
                   std::string(text.substr(0, 32)) + "\" is no incarnation number");
  }
  return ToGrpc(fence.Admit(caller));
}

grpc::Status ParseLengthPrefixed(BufferReader& reader, std::int64_t max_bytes, const char* what,
                                 google::protobuf::MessageLite* message) {
  unsigned char prefix[sizeof(std::uint32_t)];
  if (!reader.Read(prefix, sizeof(prefix))) {
    return Invalid(std::string(what) + ": fewer than 4 bytes for its length");
  }
  std::uint32_t size = 0;
  for (std::size_t i = 0; i < sizeof(prefix); ++i) {
    size |= static_cast<std::uint32_t>(prefix[i]) << (8 * i);
  }
  if (auto s = CheckSize(size, reader.remaining(), max_bytes, what); !s.ok()) return s;
  return ParseBytes(reader, size, what, message);
}

grpc::Status ParsePullRequest(const grpc::ByteBuffer& buffer, const PsLimits& limits,
                              rpc::PullRequest* request) {
  BufferReader reader(buffer);
  const std::size_t size = reader.remaining();
  if (auto s = CheckSize(size, size, limits.max_header_bytes, "PullRequest"); !s.ok()) return s;
  if (auto s = ParseBytes(reader, size, "PullRequest", request); !s.ok()) return s;
  for (const auto& r : request->ranges()) {
    if (r.offset() < 0 || r.count() < 0) {
      return Invalid("PullRequest: range [" + std::to_string(r.offset()) + ", +" +
                     std::to_string(r.count()) + ") of " + r.name() + " is negative");
    }
  }
  return grpc::Status::OK;
}

grpc::Status CheckRange(const rpc::Range& range, std::size_t shard_size) {
  const auto size = static_cast<std::uint64_t>(shard_size);
  if (range.offset() < 0 || range.count() < 0 ||
      static_cast<std::uint64_t>(range.offset()) > size ||
      static_cast<std::uint64_t>(range.count()) >
          size - static_cast<std::uint64_t>(range.offset())) {
    return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                        "range [" + std::to_string(range.offset()) + ", +" +
                            std::to_string(range.count()) + ") is outside shard " + range.name() +
                            " of " + std::to_string(shard_size) + " elements");
  }
  return grpc::Status::OK;
}

}  // namespace taas::ps
