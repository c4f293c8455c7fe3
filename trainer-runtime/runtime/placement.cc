#include "placement.h"

#include <exception>
#include <new>
#include <string>

namespace taas::runtime {
namespace {

// Copies `from` into `to` (same element count, one of them on the host) through the device's
// registered memory; a device failure (DeviceMemory::Copy throws) comes back as a status.
absl::Status CopyInto(Tensor& to, const Tensor& from, const std::string& what) {
  const Device device = to.device().is_cpu() ? from.device() : to.device();
  try {
    MemoryFor(device.type)
        ->Copy(to.data(), to.device(), from.data(), from.device(),
               static_cast<std::size_t>(from.size()) * sizeof(float));
  } catch (const std::exception& e) {
    return absl::InternalError(what + ": " + e.what());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<VariablePlacement>> VariablePlacement::Place(
    std::vector<Variable*>& variables, Device device) {
  if (device.is_cpu() || MemoryFor(device.type) == nullptr) {
    return absl::FailedPreconditionError("cannot place variables on " + DeviceName(device) +
                                         ": no engine of this binary registered its memory");
  }
  auto placement = std::unique_ptr<VariablePlacement>(new VariablePlacement(device));
  for (Variable* v : variables) {
    auto mirror = std::make_unique<Variable>();
    mirror->name = v->name;
    mirror->value = v->value;  // a host copy: the runtime's from now on
    mirror->gradient = Tensor(v->value.shape());
    try {
      v->value = v->value.To(device);
      v->gradient = Tensor(v->value.shape(), device);
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError("variable " + v->name + " (" +
                                          ShapeString(v->value.shape()) + ") does not fit on " +
                                          DeviceName(device));
    } catch (const std::exception& e) {
      return absl::InternalError("placing variable " + v->name + " on " + DeviceName(device) +
                                 ": " + e.what());
    }
    placement->model_.push_back(v);
    placement->host_.push_back(std::move(mirror));
  }
  for (std::size_t i = 0; i < variables.size(); ++i) variables[i] = placement->host_[i].get();
  return placement;
}

absl::Status VariablePlacement::ValuesToDevice() {
  for (std::size_t i = 0; i < model_.size(); ++i) {
    TAAS_RETURN_IF_ERROR(CopyInto(model_[i]->value, host_[i]->value,
                                  "variable " + host_[i]->name + " to " + DeviceName(device_)));
  }
  return absl::OkStatus();
}

absl::Status VariablePlacement::GradientsToHost() {
  for (std::size_t i = 0; i < model_.size(); ++i) {
    const Tensor& gradient = model_[i]->gradient;
    Variable& mirror = *host_[i];
    if (gradient.size() != mirror.value.size() || gradient.device() != device_) {
      return absl::InvalidArgumentError(
          "variable " + mirror.name + ": its gradient must have the value's " +
          std::to_string(mirror.value.size()) + " elements on " + DeviceName(device_) + ", got " +
          std::to_string(gradient.size()) + " on " + DeviceName(gradient.device()));
    }
    TAAS_RETURN_IF_ERROR(CopyInto(mirror.gradient, gradient,
                                  "gradient of " + mirror.name + " from " + DeviceName(device_)));
  }
  return absl::OkStatus();
}

}  // namespace taas::runtime
