// Kubeflow's defaulting (SetDefaults_TFJob). Most defaults are member initialisers in tfjob.h
// (replicas 1, restartPolicy Never, cleanPodPolicy None, successPolicy ""), so a parsed manifest
// already has them; what remains touches the pod template.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "taas/tfjob/tfjob.h"

namespace taas::tfjob {

// Adds the port {"name":"tfjob-port","containerPort":2222} to the `tensorflow` container of every
// replica template that lacks a port of that name (Kubeflow adds it to the first container when no
// container is named `tensorflow`; so do we). Idempotent.
void SetDefaults(TFJob& job);

// The port replicas of this template listen on: the `tfjob-port` containerPort of the
// `tensorflow` container, else kDefaultPort (2222), like Kubeflow's GetPortFromTFJob.
int TfJobPort(const nlohmann::json& pod_template);

// The `tfjob-port` containerPort (1-65535) the `tensorflow` container declares, if any.
std::optional<int> DeclaredTfJobPort(const nlohmann::json& pod_template);

// The containerPort (1-65535) the `tensorflow` container declares under the port name `name`
// (e.g. contract::kMetricsPortName), if any.
std::optional<int> DeclaredContainerPort(const nlohmann::json& pod_template, std::string_view name);

}  // namespace taas::tfjob
