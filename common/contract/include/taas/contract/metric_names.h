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
// The global step training ends at (the job's max steps), so a reader can show progress and ETA.
inline constexpr std::string_view kMaxStepsMetric = "taas_max_steps";
// The job's final metrics (the chief's evaluate() at the end, what after_train reports): one
// sample per metric, labelled metric ("accuracy", "loss"), set once training ended.
inline constexpr std::string_view kFinalMetric = "taas_final_metric";
inline constexpr std::string_view kFinalMetricLabel = "metric";
// An info metric: one sample of value 1 per model replica device, labelled device ("cuda:0",
// "cpu") and name (what the device reports of itself; empty for cpu). The UI's job page shows it.
inline constexpr std::string_view kReplicaDeviceInfoMetric = "taas_replica_device_info";
inline constexpr std::string_view kDeviceLabel = "device";
inline constexpr std::string_view kDeviceNameLabel = "name";

// A stall (taas/base/stall_watch.h): while a replica has waited for a peer longer than its stall
// threshold (TAAS_STALL_SECS), one sample labelled peer (whom it waits for: "ps-0") holding the
// seconds it has waited; no sample otherwise. The progress views show it instead of the rate
// (taas/tfjob/progress.h, ProgressStall).
inline constexpr std::string_view kStallSecondsMetric = "taas_stall_seconds";
inline constexpr std::string_view kStallPeerLabel = "peer";
// The seconds the replica spent stalled so far, every stall counted from its wait's start; only
// grows while the process runs, so it is served as a counter (TYPE counter). The scrapers
// (taas/prometheus/text.h) read samples by name and skip TYPE lines either way.
inline constexpr std::string_view kStalledSecondsTotalMetric = "taas_stalled_seconds_total";
// Bad records the replica's input streams left out under data::BadRecords::kSkip
// (taas/data/stream_pipeline.h), every stream of the process together; a counter.
inline constexpr std::string_view kSkippedRecordsTotalMetric = "taas_data_skipped_records_total";

}  // namespace taas::contract
