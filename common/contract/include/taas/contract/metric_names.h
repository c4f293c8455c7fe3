// The trainer's Prometheus gauges: the runtime exports them on its metrics port (ports.h); the
// launcher prints progress from them and the UI server draws its curves from them.
#pragma once

#include <string_view>

namespace taas::contract {

inline constexpr std::string_view kGlobalStepMetric = "taas_global_step";
inline constexpr std::string_view kLossMetric = "taas_loss";
inline constexpr std::string_view kExamplesPerSecondMetric = "taas_examples_per_second";
inline constexpr std::string_view kLearningRateMetric = "taas_learning_rate";
inline constexpr std::string_view kEvalAccuracyMetric = "taas_eval_accuracy";

}  // namespace taas::contract
