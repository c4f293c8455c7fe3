#include "replica_state.h"

#include <exception>
#include <new>
#include <string>

namespace taas::runtime {

absl::StatusOr<std::unique_ptr<ReplicaState>> ReplicaState::Create(
    std::vector<Variable*>& variables, std::vector<Variable*>& states, Device device) {
  if (MemoryFor(device.type) == nullptr) {
    return absl::FailedPreconditionError("cannot place variables on " + DeviceName(device) +
                                         ": no engine of this binary registered its memory");
  }
  auto state = std::unique_ptr<ReplicaState>(new ReplicaState(device));
  try {
    TAAS_RETURN_IF_ERROR(state->Fuse(variables));
    TAAS_RETURN_IF_ERROR(state->MirrorStates(states));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("the model's variables (" +
                                        std::to_string(state->elements_) +
                                        " floats) do not fit on " + DeviceName(device));
  } catch (const std::exception& e) {
    return absl::InternalError("placing the model's variables on " + DeviceName(device) + ": " +
                               e.what());
  }
  return state;
}

absl::Status ReplicaState::Fuse(std::vector<Variable*>& variables) {
  model_ = variables;
  parts_.resize(variables.size());
  // Reverse registration order: backward finishes the last layer's variables first.
  for (std::size_t i = variables.size(); i-- > 0;) {
    const std::int64_t size = variables[i]->value.size();
    parts_[i] = {elements_, size, (size + kAlignment - 1) / kAlignment * kAlignment};
    elements_ += parts_[i].padded;
  }
  Tensor initial({elements_});
  for (std::size_t i = 0; i < variables.size(); ++i) {
    Tensor part = initial.Slice(parts_[i].offset, {parts_[i].size});
    TAAS_RETURN_IF_ERROR(CopyInto(variables[i]->value, part));
  }
  values_ = Tensor({elements_}, device_);
  gradients_ = Tensor({elements_ + kAlignment}, device_);  // the loss, then padding
  TAAS_RETURN_IF_ERROR(CopyInto(initial, values_));
  for (std::size_t i = 0; i < variables.size(); ++i) {
    Variable& v = *variables[i];
    const Shape shape = v.value.shape();
    v.value = values_.Slice(parts_[i].offset, shape);
    v.gradient = gradients_.Slice(parts_[i].offset, shape);
  }
  if (device_.is_cpu()) return absl::OkStatus();
  host_values_ = std::move(initial);
  host_gradients_ = Tensor({elements_});
  for (std::size_t i = 0; i < variables.size(); ++i) {
    const Shape shape = model_[i]->value.shape();
    mirrors_.push_back(std::make_unique<Variable>(
        Variable{model_[i]->name, host_values_.Slice(parts_[i].offset, shape),
                 host_gradients_.Slice(parts_[i].offset, shape)}));
    variables[i] = mirrors_.back().get();
  }
  return absl::OkStatus();
}

absl::Status ReplicaState::MirrorStates(std::vector<Variable*>& states) {
  model_states_ = states;
  if (device_.is_cpu()) return absl::OkStatus();
  for (auto*& s : states) {
    auto mirror = std::make_unique<Variable>(Variable{s->name, Tensor(s->value.shape()), {}});
    TAAS_RETURN_IF_ERROR(CopyInto(s->value, mirror->value));
    s = state_mirrors_.emplace_back(std::move(mirror)).get();
  }
  return absl::OkStatus();
}

absl::Status ReplicaState::StateToDevice() {
  if (device_.is_cpu() || state_device_current_) return absl::OkStatus();
  for (std::size_t i = 0; i < model_states_.size(); ++i) {
    TAAS_RETURN_IF_ERROR(CopyInto(state_mirrors_[i]->value, model_states_[i]->value));
  }
  state_device_current_ = state_host_current_ = true;
  return absl::OkStatus();
}

absl::Status ReplicaState::StateToHost() {
  if (device_.is_cpu() || state_host_current_) return absl::OkStatus();
  for (std::size_t i = 0; i < model_states_.size(); ++i) {
    TAAS_RETURN_IF_ERROR(CopyInto(model_states_[i]->value, state_mirrors_[i]->value));
  }
  state_device_current_ = state_host_current_ = true;
  return absl::OkStatus();
}

absl::Status ReplicaState::ValuesToDevice() {
  if (device_.is_cpu() || device_current_) return absl::OkStatus();
  TAAS_RETURN_IF_ERROR(CopyInto(host_values_, values_));
  device_current_ = host_current_ = true;
  return absl::OkStatus();
}

absl::Status ReplicaState::ValuesToHost() {
  if (device_.is_cpu() || host_current_) return absl::OkStatus();
  TAAS_RETURN_IF_ERROR(CopyInto(values_, host_values_));
  device_current_ = host_current_ = true;
  return absl::OkStatus();
}

absl::Status ReplicaState::GradientsToHost() {
  if (device_.is_cpu()) return absl::OkStatus();
  Tensor parts = gradients_.Slice(0, {elements_});
  return CopyInto(parts, host_gradients_);
}

absl::Status ReplicaState::CheckViews() const {
  for (std::size_t i = 0; i < model_.size(); ++i) {
    const Variable& v = *model_[i];
    const std::int64_t offset = parts_[i].offset;
    const auto replaced = [&](const Tensor& tensor, const Tensor& buffer) {
      return tensor.data() != buffer.data() + offset || tensor.size() != parts_[i].size ||
             tensor.device() != device_;
    };
    const char* which =
        replaced(v.value, values_) ? "value" : (replaced(v.gradient, gradients_) ? "gradient" : "");
    if (*which != '\0') {
      return absl::InvalidArgumentError(
          "variable " + v.name + ": its " + which +
          " is no longer the tensor the runtime gave it: write into a registered variable's "
          "value and gradient (their elements, or taas::CopyInto), never assign a new tensor to "
          "them");
    }
  }
  return absl::OkStatus();
}

}  // namespace taas::runtime
