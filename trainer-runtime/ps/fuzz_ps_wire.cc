// libFuzzer target: what a peer sends a parameter server on the raw-framed data path (ps.proto),
// through the same parsing and store calls as the service (server.cc): a Pull request checked
// against the shards, or a Push stream (a length-prefixed PushHeader, then gradient bytes split
// into messages anywhere) into a real store. The first input byte picks the call and, for a push,
// the size of the messages the rest is split into. Nothing may crash, allocate past the limits or
// what arrived, or leave a push unanswered.
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <vector>

#include "ps.pb.h"
#include "rpc_util.h"
#include "taas/ps/store.h"
#include "wire.h"

namespace {

using taas::ps::ParameterStore;

void Require(bool condition) {
  if (!condition) std::abort();
}

grpc::ByteBuffer Buffer(const std::uint8_t* data, std::size_t size) {
  grpc::Slice slice(data, size);
  return grpc::ByteBuffer(&slice, 1);
}

// Two shards, so names, sizes and ranges can be right or wrong; synchronous with one replica, so
// a complete push is applied at once and its answer arrives before Finish returns.
ParameterStore& Store() {
  static ParameterStore* store = [] {
    auto* s = new ParameterStore(1);
    taas::ps::TrainingSpec spec;
    spec.sync = true;
    spec.optimizer.name = "sgd";
    spec.optimizer.learning_rate.initial = 0.0f;  // Values stay finite whatever is pushed.
    Require(
        s->Initialize(spec, {{"w", std::vector<float>(6, 1.0f), {}}, {"b", {0.0f}, {}}}, 0).ok());
    return s;
  }();
  return *store;
}

void FuzzPull(const grpc::ByteBuffer& buffer, const taas::ps::PsLimits& limits) {
  taas::ps::rpc::PullRequest request;
  if (!taas::ps::ParsePullRequest(buffer, limits, &request).ok()) return;
  std::vector<std::string> names;
  for (const auto& range : request.ranges()) names.push_back(range.name());
  std::vector<std::shared_ptr<const std::vector<float>>> values;
  if (!Store().PullShared(names, &values).ok()) return;
  for (int i = 0; i < request.ranges_size(); ++i) {
    const auto& range = request.ranges(i);
    if (!taas::ps::CheckRange(range, values[i]->size()).ok()) continue;
    Require(range.offset() + range.count() <= static_cast<std::int64_t>(values[i]->size()));
  }
}

void FuzzPush(const std::uint8_t* data, std::size_t size, std::size_t piece,
              const taas::ps::PsLimits& limits) {
  taas::ps::BufferReader reader(Buffer(data, size));
  taas::ps::rpc::PushHeader header;
  if (!taas::ps::ParseLengthPrefixed(reader, limits.max_header_bytes, "PushHeader", &header).ok())
    return;
  std::vector<ParameterStore::GradientSize> sizes;
  for (const auto& g : header.gradients()) sizes.push_back({g.name(), g.size()});
  auto stream = Store().BeginPush(header.step(), std::move(sizes), header.worker());
  if (!stream.ok()) return;
  // The rest arrives as messages of `piece` bytes, as a peer may split it.
  std::vector<char> rest(reader.remaining());
  Require(reader.Read(rest.data(), rest.size()));
  for (std::size_t at = 0; at < rest.size(); at += piece) {
    if (!(*stream)->Add(rest.data() + at, std::min(piece, rest.size() - at)).ok()) return;
  }
  std::optional<absl::StatusOr<taas::ps::PushResult>> answer;
  (*stream)->Finish([&](absl::StatusOr<taas::ps::PushResult> result) { answer = result; });
  Require(answer.has_value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // protobuf logs every string field that is not UTF-8; the service answers such a call with an
  // error, and a fuzzer's output would be nothing but these lines.
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
  if (size == 0) return 0;
  const std::uint8_t selector = data[0];
  taas::ps::PsLimits limits;
  limits.max_header_bytes = 4096;
  if (selector & 1) {
    FuzzPull(Buffer(data + 1, size - 1), limits);
  } else {
    FuzzPush(data + 1, size - 1, static_cast<std::size_t>(selector >> 1) + 1, limits);
  }
  return 0;
}
