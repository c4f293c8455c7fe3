// The torch models (models.h) as a taas DistModel: one trainer binary, fashion-mnist-torch, that
// runs as PS, worker, chief or evaluator from TF_CONFIG like every taas trainer. Model arguments
// after `--`:
//   --model=resnet|lstm|cnn    which model (default resnet; cnn: the built-in engine's CNN)
//   --batch_size=N             examples per step on this worker (default 64), split among its
//                              model replicas
//   --optimizer=NAME, --learning_rate=X   the runtime's update rule (default adam, 0.001)
//   --cosine_decay             the rate decays from --learning_rate to 0 over the job's max
//                              steps (TF_MAX_STEPS; Keras's CosineDecay with decay_steps the max
//                              steps); default: constant
//   --data_dir=DIR             the Fashion-MNIST IDX files (default: Debian's dataset package)
//   --seed=N                   initial parameters and shuffling (default 1)
//   --threads=N                LibTorch's compute threads (default: the runtime's share)
//   --warm_start_from=DIR      transfer learning: the trunk (parameters and BatchNorm statistics)
//                              from another job's model dir, frozen; only the head trains
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "taas/data/idx.h"
#include "taas/data/pipeline.h"
#include "taas/optim/optimizer.h"
#include "taas/runtime/dist_model.h"
#include "taas/torch/module.h"
#include "taas/torch_models/models.h"

namespace taas::torch_models {

// The learning rate the model arguments ask for: constant, or with `cosine_decay` decaying to 0
// over the job's `max_steps` (an error naming the setting when the job has none).
absl::StatusOr<optim::LearningRateSchedule> LearningRate(double rate, bool cosine_decay,
                                                         std::int64_t max_steps);

class TorchTrainer : public DistModel {
 public:
  absl::Status build_model(ModelBuilder& builder) override;
  InitFn get_init_fn() override;
  StepResult train(Session& session) override;
  absl::StatusOr<std::map<std::string, double>> evaluate(Session& session) override;
  void after_train(Session& session, bool is_chief) override;
  // `taas predict`: the request's IDX image files (each file's labels, a "-labels-idx1-ubyte"
  // file beside it, when there is one), in order; the logits with BatchNorm's running statistics.
  absl::StatusOr<std::unique_ptr<data::BatchStream>> predict_inputs(
      Session& session, const PredictRequest& request) override;
  absl::StatusOr<PredictOutputs> predict(Session& session, const data::Batch& batch) override;

  // The model (for tests).
  Classifier& classifier() { return *classifier_; }

 private:
  absl::Status ParseArgs(const std::vector<std::string>& args);
  absl::Status LoadTestSet();

  std::string model_name_ = "resnet";
  std::int64_t batch_size_ = 64;
  std::string optimizer_name_ = "adam";
  double learning_rate_ = 0.001;
  bool cosine_decay_ = false;
  std::string data_dir_ = "/usr/share/datasets/fashion-mnist";
  std::int64_t seed_ = 1;
  std::int64_t threads_ = 0;
  std::string warm_start_from_;

  ::torch::Device device_ = ::torch::kCPU;
  std::optional<Classifier> classifier_;
  std::unique_ptr<torch_engine::BoundModule> bound_;
  std::unique_ptr<data::Pipeline> pipeline_;
  std::optional<data::Batch> batch_;  // the step's, alive while its tensors are used
  std::shared_ptr<const data::ImageDataset> test_;
};

}  // namespace taas::torch_models
