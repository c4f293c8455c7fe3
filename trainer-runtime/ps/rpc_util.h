// Conversions shared by the PS service and client (private to this folder).
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "ps.pb.h"
#include "taas/base/status.h"
#include "taas/optim/optimizer.h"
#include "taas/ps/auth.h"

namespace taas::ps {

// gRPC and absl share their status code numbering.
inline absl::Status FromGrpc(const grpc::Status& s, const std::string& what) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      what + ": " + s.error_message());
}

inline grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

inline void SetFloats(std::string* out, std::span<const float> values) {
  out->assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// `bytes` as float32 values; InvalidArgument naming `what` when they are not whole floats.
inline absl::StatusOr<std::vector<float>> FloatVector(const std::string& bytes,
                                                      const std::string& what) {
  if (bytes.size() % sizeof(float) != 0) {
    return absl::InvalidArgumentError(what + " has " + std::to_string(bytes.size()) +
                                      " bytes, not a whole number of float32 values");
  }
  std::vector<float> out(bytes.size() / sizeof(float));
  // An empty vector's data() may be null, which memcpy must not get even for 0 bytes (UBSan).
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

// The schedule kinds cross the wire by number.
using ScheduleKind = optim::LearningRateSchedule::Kind;
static_assert(static_cast<int>(ScheduleKind::kExponential) == rpc::OptimizerSpec::EXPONENTIAL);
static_assert(static_cast<int>(ScheduleKind::kPiecewiseConstant) ==
              rpc::OptimizerSpec::PIECEWISE_CONSTANT);
static_assert(static_cast<int>(ScheduleKind::kPolynomial) == rpc::OptimizerSpec::POLYNOMIAL);
static_assert(static_cast<int>(ScheduleKind::kInverseTime) == rpc::OptimizerSpec::INVERSE_TIME);
static_assert(static_cast<int>(ScheduleKind::kCosine) == rpc::OptimizerSpec::COSINE);

// Sends `config` with its defaults filled in (optim::WithDefaults).
inline void ToProto(const optim::OptimizerConfig& config, rpc::OptimizerSpec* out) {
  const optim::OptimizerConfig c = optim::WithDefaults(config);
  out->set_name(c.name);
  out->set_learning_rate(c.learning_rate.initial);
  out->set_decay_rate(c.learning_rate.decay_rate);
  out->set_decay_steps(c.learning_rate.decay_steps);
  out->set_staircase(c.learning_rate.staircase);
  out->set_momentum(*c.momentum);
  out->set_use_nesterov(c.use_nesterov);
  out->set_beta1(c.beta1);
  out->set_beta2(c.beta2);
  out->set_epsilon(c.epsilon);
  const optim::LearningRateSchedule& lr = c.learning_rate;
  out->set_schedule(static_cast<rpc::OptimizerSpec::Schedule>(lr.kind));
  out->mutable_boundaries()->Add(lr.boundaries.begin(), lr.boundaries.end());
  out->mutable_values()->Add(lr.values.begin(), lr.values.end());
  out->set_end_learning_rate(lr.end_learning_rate);
  out->set_power(lr.power);
  out->set_cycle(lr.cycle);
  out->set_rho(c.rho);
  out->set_centered(c.centered);
  out->set_initial_accumulator_value(c.initial_accumulator_value);
  out->set_weight_decay(*c.weight_decay);
  out->mutable_exclude_from_weight_decay()->Add(c.exclude_from_weight_decay.begin(),
                                                c.exclude_from_weight_decay.end());
  out->set_global_clipnorm(c.global_clipnorm);
  out->set_alpha(lr.alpha);
  out->set_warmup_steps(lr.warmup_steps);
  out->set_warmup_initial(lr.warmup_initial);
}

inline optim::OptimizerConfig FromProto(const rpc::OptimizerSpec& p) {
  optim::OptimizerConfig c;
  c.name = p.name();
  c.learning_rate.initial = p.learning_rate();
  c.learning_rate.decay_rate = p.decay_rate();
  c.learning_rate.decay_steps = p.decay_steps();
  c.learning_rate.staircase = p.staircase();
  c.momentum = p.momentum();
  c.use_nesterov = p.use_nesterov();
  c.beta1 = p.beta1();
  c.beta2 = p.beta2();
  c.epsilon = p.epsilon();
  // The enums share their numbers (static_asserts above); an unknown one stays out of range for
  // CreateOptimizer to refuse.
  c.learning_rate.kind = static_cast<optim::LearningRateSchedule::Kind>(p.schedule());
  c.learning_rate.boundaries.assign(p.boundaries().begin(), p.boundaries().end());
  c.learning_rate.values.assign(p.values().begin(), p.values().end());
  c.learning_rate.end_learning_rate = p.end_learning_rate();
  c.learning_rate.power = p.power();
  c.learning_rate.cycle = p.cycle();
  c.rho = p.rho();
  c.centered = p.centered();
  c.initial_accumulator_value = p.initial_accumulator_value();
  c.weight_decay = p.weight_decay();
  c.exclude_from_weight_decay.assign(p.exclude_from_weight_decay().begin(),
                                     p.exclude_from_weight_decay().end());
  c.global_clipnorm = p.global_clipnorm();
  c.learning_rate.alpha = p.alpha();
  c.learning_rate.warmup_steps = p.warmup_steps();
  c.learning_rate.warmup_initial = p.warmup_initial();
  return c;
}

// PsLimits::max_message_bytes as gRPC's channel argument wants it (an int).
inline int MaxMessageBytes(const PsLimits& limits) {
  return static_cast<int>(
      std::clamp<std::int64_t>(limits.max_message_bytes, 1, std::numeric_limits<int>::max()));
}

// The raw-framed data-path methods (ps.proto, top of the file).
inline constexpr char kPullMethod[] = "/taas.ps.rpc.ParameterServer/Pull";
inline constexpr char kPushMethod[] = "/taas.ps.rpc.ParameterServer/Push";

// Transport settings for bulk tensors, the same on both ends: HTTP/2 frames as large as a piece
// (fewer frame headers to parse), a write buffer that holds several pieces, and socket reads of
// MBs rather than gRPC's default 8 KB.
template <class SetInt>
void SetBulkTransportArgs(SetInt set) {
  set(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 16 << 20);
  set(GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, 64 << 20);
  set(GRPC_ARG_TCP_READ_CHUNK_SIZE, 4 << 20);
  set(GRPC_ARG_TCP_MIN_READ_CHUNK_SIZE, 1 << 20);
  set(GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, 16 << 20);
}

// A small protobuf message as a one-slice buffer (control data; tensors never go through here).
inline grpc::ByteBuffer SerializeToBuffer(const google::protobuf::MessageLite& message) {
  grpc::Slice slice(message.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

// `bytes` after their size as 4 little-endian bytes (the Pull reply's header framing).
inline std::string LengthPrefixed(const std::string& bytes) {
  const auto size = static_cast<std::uint32_t>(bytes.size());
  std::string out(sizeof(size), '\0');
  for (std::size_t i = 0; i < sizeof(size); ++i)
    out[i] = static_cast<char>((size >> (8 * i)) & 0xff);
  return out + bytes;
}

// Reads a received buffer front to back across its slices, wherever gRPC cut them.
class BufferReader {
 public:
  explicit BufferReader(const grpc::ByteBuffer& buffer) {
    if (!buffer.Dump(&slices_).ok()) slices_.clear();
    for (const auto& s : slices_) remaining_ += s.size();
  }
  std::size_t remaining() const { return remaining_; }

  // Copies the next `n` bytes to `out`; false (nothing copied) when fewer remain.
  bool Read(void* out, std::size_t n) {
    if (n > remaining_) return false;
    auto* dst = static_cast<char*>(out);
    remaining_ -= n;
    while (n > 0) {
      const grpc::Slice& s = slices_[index_];
      const std::size_t take = std::min(n, s.size() - offset_);
      std::memcpy(dst, s.begin() + offset_, take);
      dst += take;
      n -= take;
      offset_ += take;
      if (offset_ == s.size()) {
        ++index_;
        offset_ = 0;
      }
    }
    return true;
  }

  // Calls `f(data, size)` for each contiguous run of the rest of the buffer.
  template <class F>
  void ForEachRest(F f) {
    for (; index_ < slices_.size(); ++index_, offset_ = 0) {
      const grpc::Slice& s = slices_[index_];
      if (s.size() > offset_)
        f(reinterpret_cast<const char*>(s.begin()) + offset_, s.size() - offset_);
    }
    remaining_ = 0;
  }

 private:
  std::vector<grpc::Slice> slices_;
  std::size_t index_ = 0, offset_ = 0, remaining_ = 0;
};

// Lends memory the caller owns to gRPC as slices without copying, and waits until gRPC has let go
// of every one (it may still hold a slice briefly after a call completed, or until a cancelled
// call is torn down).
class SliceLease {
 public:
  SliceLease() = default;
  SliceLease(const SliceLease&) = delete;
  SliceLease& operator=(const SliceLease&) = delete;
  ~SliceLease() { Wait(); }

  grpc::Slice Lend(const void* data, std::size_t size) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++outstanding_;
    }
    // gRPC only reads send slices; the non-const pointer is its API's.
    return grpc::Slice(const_cast<void*>(data), size, &SliceLease::Release, this);
  }

  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return outstanding_ == 0; });
  }

 private:
  static void Release(void* self) {
    auto* lease = static_cast<SliceLease*>(self);
    std::lock_guard<std::mutex> lock(lease->mu_);
    if (--lease->outstanding_ == 0) lease->cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  int outstanding_ = 0;  // guarded by mu_
};

}  // namespace taas::ps
