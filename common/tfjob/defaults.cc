#include "taas/tfjob/defaults.h"

namespace taas::tfjob {
namespace {

// The container Kubeflow defaults: the one named `tensorflow`, else the first one.
nlohmann::json* DefaultContainerForDefaults(nlohmann::json& pod_template) {
  if (!pod_template.is_object()) return nullptr;
  auto spec = pod_template.find("spec");
  if (spec == pod_template.end() || !spec->is_object()) return nullptr;
  auto containers = spec->find("containers");
  if (containers == spec->end() || !containers->is_array() || containers->empty()) return nullptr;
  for (auto& container : *containers) {
    if (container.is_object() && container.value("name", nlohmann::json()) == kDefaultContainerName)
      return &container;
  }
  return containers->front().is_object() ? &containers->front() : nullptr;
}

const nlohmann::json* FindNamedPort(const nlohmann::json& container,
                                    std::string_view name = kDefaultPortName) {
  const auto ports = container.find("ports");
  if (ports == container.end() || !ports->is_array()) return nullptr;
  for (const auto& port : *ports) {
    if (port.is_object() && port.value("name", nlohmann::json()) == name) return &port;
  }
  return nullptr;
}

void SetDefaultPort(nlohmann::json& pod_template) {
  nlohmann::json* container = DefaultContainerForDefaults(pod_template);
  if (container == nullptr || FindNamedPort(*container) != nullptr) return;
  auto& ports = (*container)["ports"];
  if (!ports.is_array()) ports = nlohmann::json::array();
  ports.push_back({{"name", kDefaultPortName}, {"containerPort", kDefaultPort}});
}

}  // namespace

void SetDefaults(TFJob& job) {
  for (auto& [type, replica] : job.spec.replica_specs) SetDefaultPort(replica.pod_template);
}

int TfJobPort(const nlohmann::json& pod_template) {
  return DeclaredTfJobPort(pod_template).value_or(kDefaultPort);
}

std::optional<int> DeclaredTfJobPort(const nlohmann::json& pod_template) {
  return DeclaredContainerPort(pod_template, kDefaultPortName);
}

std::optional<int> DeclaredContainerPort(const nlohmann::json& pod_template,
                                         std::string_view name) {
  const nlohmann::json* container = FindDefaultContainer(pod_template);
  if (container == nullptr) return std::nullopt;
  const nlohmann::json* port = FindNamedPort(*container, name);
  if (port == nullptr) return std::nullopt;
  const auto number = port->find("containerPort");
  if (number == port->end() || !number->is_number_integer()) return std::nullopt;
  const std::int64_t value = number->get<std::int64_t>();
  if (value < 1 || value > 65535) return std::nullopt;
  return static_cast<int>(value);
}

}  // namespace taas::tfjob
