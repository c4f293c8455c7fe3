// Conversions shared by the PS service and client (private to this folder).
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstring>
#include <span>
#include <string>

#include "ps.pb.h"
#include "taas/base/status.h"
#include "taas/nn/optimizer.h"

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

inline std::span<const float> Floats(const std::string& bytes) {
  return {reinterpret_cast<const float*>(bytes.data()), bytes.size() / sizeof(float)};
}

inline std::vector<float> FloatVector(const std::string& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

inline void ToProto(const nn::OptimizerConfig& c, rpc::OptimizerSpec* out) {
  out->set_name(c.name);
  out->set_learning_rate(c.learning_rate.initial);
  out->set_decay_rate(c.learning_rate.decay_rate);
  out->set_decay_steps(c.learning_rate.decay_steps);
  out->set_staircase(c.learning_rate.staircase);
  out->set_momentum(c.momentum);
  out->set_use_nesterov(c.use_nesterov);
  out->set_beta1(c.beta1);
  out->set_beta2(c.beta2);
  out->set_epsilon(c.epsilon);
}

inline nn::OptimizerConfig FromProto(const rpc::OptimizerSpec& p) {
  nn::OptimizerConfig c;
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
  return c;
}

// Channel and server options: parameter tensors can be far larger than gRPC's 4 MB default.
inline constexpr int kMaxMessageBytes = std::numeric_limits<int>::max();

}  // namespace taas::ps
