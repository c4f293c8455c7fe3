// Predicting with a trained model: a checkpoint restored into the model's variables, its
// predict_inputs read in batches, its predict() run on each, and the outputs written as CSV or
// .npy (Keras's model.predict, TensorFlow Serving's batch scoring without the server). RunMain
// does it when TAAS_PREDICT_OUTPUT is set (what `taas predict job.yaml` runs); Predict does it in
// this process (a tool, a test).
//
//   taas::PredictOptions options;
//   options.model_dir = "/tmp/taas/job";
//   options.inputs = {"/data/t10k-images-idx3-ubyte.gz"};
//   options.output = "preds.csv";
//   TAAS_ASSIGN_OR_RETURN(taas::PredictSummary done, taas::Predict(factory, options, model_args));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/runtime/dist_model.h"
#include "taas/runtime/local.h"

namespace taas {

struct PredictOptions {
  // The newest checkpoint of model_dir that verifies (checkpoint::LoadLatest), or the checkpoint
  // `checkpoint` names (a prefix such as "<dir>/model.ckpt-400", checkpoint::Load) when set.
  std::string model_dir;
  std::string checkpoint;
  std::vector<std::string> inputs;  // PredictRequest::inputs: patterns the model's reader opens
  std::string output;               // .csv or .npy (PredictionWriter)
  std::int64_t batch_size = 100;
  Device device = Device::Cpu();  // where the model computes
};

struct PredictSummary {
  std::string checkpoint;  // the prefix restored
  std::int64_t global_step = 0;
  std::int64_t examples = 0;
  std::int64_t outputs_per_example = 0;
  // The fraction of examples whose predicted class is their label, when the outputs are classes
  // and the inputs had labels.
  std::optional<double> accuracy;
  double seconds = 0;  // from the first batch asked for to the output renamed into place
};

// Builds the model as the runtime does (TrainerInfo::predicting, role kEvaluator, `model_args`
// after `--`), restores the checkpoint and writes the predictions. Errors: InvalidArgument for bad
// options or an output name without .csv or .npy; NotFound for a model dir without checkpoints;
// DataLoss for a checkpoint that does not verify; InvalidArgument naming the variable and both
// shapes for a checkpoint of another model; the model's errors (build_model, predict_inputs,
// predict) as it returned them, the batch named; the output's errors naming the file. On any
// error no output file is left (nor a partial one).
absl::StatusOr<PredictSummary> Predict(ModelFactory factory, const PredictOptions& options,
                                       std::vector<std::string> model_args = {});

// The predictions file, written under a temporary name (`<path>.partial`) and renamed into place
// by Finish, so that a file at `path` is always complete; destroyed unfinished, it removes what it
// wrote.
//  - .csv: a header, then a row per example: output_0..output_{k-1}, then `class` (the argmax)
//    when the outputs are classes, `label` when the inputs had labels, target_0.. when they had
//    float targets; floats with 9 significant digits (they read back as the same float32).
//  - .npy: the outputs as float32 [examples, k]; for classes also `<stem>.classes.npy`, int32
//    [examples], renamed before the outputs.
// Not thread-safe.
class PredictionWriter {
 public:
  // InvalidArgument for a name that ends in neither .csv nor .npy; PermissionDenied or NotFound
  // naming the file when it cannot be created (a missing folder, no write permission).
  static absl::StatusOr<std::unique_ptr<PredictionWriter>> Create(const std::string& path);
  ~PredictionWriter();
  PredictionWriter(const PredictionWriter&) = delete;
  PredictionWriter& operator=(const PredictionWriter&) = delete;

  // One batch: `outputs` holds rows x k floats, row-major; `labels` is empty or holds rows
  // classes, `targets` empty or a multiple of rows floats. InvalidArgument when k, `classes`, or
  // whether there are labels or targets (and how many per row) differ from the first batch's, or
  // the sizes do not fit rows; Internal naming the file for a failed write.
  absl::Status Append(std::int64_t rows, std::int64_t k, std::span<const float> outputs,
                      bool classes, std::span<const std::int32_t> labels,
                      std::span<const float> targets);
  // Flushes, syncs and renames into place. InvalidArgument when nothing was appended (an empty
  // input: nothing is written); Internal naming the file for a failed write or rename.
  absl::Status Finish();

  std::int64_t examples() const;
  std::int64_t outputs_per_example() const;
  // Examples whose predicted class equals their label so far, when both are known.
  std::optional<std::int64_t> correct() const;

 private:
  struct State;
  explicit PredictionWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace taas
