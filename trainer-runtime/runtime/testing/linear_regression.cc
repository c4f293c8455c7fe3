// A tiny model for the runtime's own tests: linear regression y = w.x + b on synthetic data,
// gradients by hand (no layers needed). The data of each step depends only on the global step and
// the replica's place among all replicas (worker rank, and replica within the worker under
// all-reduce), so synchronous training on N replicas sees exactly the samples a single process
// sees with `--shards=N` (N sub-batches per step): their parameters must agree.
//
// Model arguments (after --): --shards=N (sub-batches per step, default 1), --batch=B (32),
// --step_ms=M (sleep per step, to make runs long enough to kill replicas), --lr=F (0.05),
// --optimizer=NAME (an optim::OptimizerConfig name, default sgd), --clip=F (global_clipnorm),
// --weight_decay=F, --exclude=S (exclude_from_weight_decay, one name), --init_bias=F (a warm
// start: the init fn sets the bias),
// --state (state that is not trained: "linear/label_mean", a running mean of the labels this
// replica's batches hold, and "linear/frozen", which nothing trains), --frozen=F (implies --state:
// the init fn sets linear/frozen to F). With --state, after_train logs "final state" and
// evaluate() reports both as metrics.
// --fail_evaluate=MESSAGE (evaluate() returns that error: a test set that cannot be read).
// --long_line=N (prints one line of N bytes ending "the end of the long line" when the model is
// built: the log viewer's browser test).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "taas/runtime/dist_model.h"

namespace {

constexpr int kFeatures = 8;

float TrueWeight(int i) { return 0.5f * static_cast<float>(i + 1); }
constexpr float kTrueBias = 2.0f;

class LinearRegression : public taas::DistModel {
 public:
  absl::Status build_model(taas::ModelBuilder& builder) override {
    for (const auto& arg : builder.info().args) {
      auto eq = arg.find('=');
      std::string key = arg.substr(0, eq),
                  value = eq == std::string::npos ? "" : arg.substr(eq + 1);
      if (key == "--shards") {
        shards_ = std::stoi(value);
      } else if (key == "--batch") {
        batch_ = std::stoi(value);
      } else if (key == "--step_ms") {
        step_ms_ = std::stoi(value);
      } else if (key == "--lr") {
        lr_ = std::stof(value);
      } else if (key == "--optimizer") {
        optimizer_ = value;
      } else if (key == "--clip") {
        clip_ = std::stof(value);
      } else if (key == "--weight_decay") {
        weight_decay_ = std::stof(value);
      } else if (key == "--exclude") {
        exclude_.push_back(value);
      } else if (key == "--init_bias") {
        init_bias_ = std::stof(value);
      } else if (key == "--state") {
        state_ = true;
      } else if (key == "--frozen") {
        state_ = true;
        frozen_init_ = std::stof(value);
      } else if (key == "--fail_evaluate") {
        evaluate_error_ = value;
      } else if (key == "--long_line") {
        PrintLongLine(std::stoul(value));
      } else {
        return absl::InvalidArgumentError("unknown model argument " + arg);
      }
    }
    w_.name = "linear/w";
    w_.value = taas::Tensor({kFeatures});
    w_.gradient = taas::Tensor({kFeatures});
    b_.name = "linear/b";
    b_.value = taas::Tensor({1});
    b_.gradient = taas::Tensor({1});
    // Initial values the chief pushes when there is no checkpoint.
    for (int i = 0; i < kFeatures; ++i) w_.value.data()[i] = 0.01f * static_cast<float>(i);
    builder.AddVariables({&w_, &b_});
    if (state_) {
      label_mean_ = {"linear/label_mean", taas::Tensor({1}), {}};
      frozen_ = {"linear/frozen", taas::Tensor({1}), {}};
      builder.AddStates({&label_mean_, &frozen_});
    }
    taas::optim::OptimizerConfig opt;
    opt.name = optimizer_;
    opt.learning_rate.initial = lr_;
    opt.global_clipnorm = clip_;
    opt.weight_decay = weight_decay_;
    opt.exclude_from_weight_decay = exclude_;
    builder.SetOptimizer(opt);
    builder.SetBatchSize(static_cast<std::int64_t>(batch_) * shards_);
    rank_ = builder.info().replica_id_in_sync();
    return absl::OkStatus();
  }

  static void PrintLongLine(std::size_t bytes) {
    const std::string end = " the end of the long line";
    const std::string line = std::string(bytes > end.size() ? bytes - end.size() : 0, 'x') + end;
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }

  taas::InitFn get_init_fn() override {
    if (!init_bias_ && !frozen_init_) return {};
    return [this](taas::Session& session) {
      if (init_bias_) {
        b_.value.data()[0] = *init_bias_;
        session.logger().Info("warm start", {{"bias", static_cast<double>(*init_bias_)}});
      }
      // Through the session's host state, as a warm start of a model on a device must.
      if (frozen_init_) session.state()[1]->value.data()[0] = *frozen_init_;
      return absl::OkStatus();
    };
  }

  taas::StepResult train(taas::Session& session) override {
    if (step_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step_ms_));
    float gw[kFeatures] = {}, gb = 0, loss = 0;
    for (int s = 0; s < shards_; ++s) {
      // One sub-batch: the data of (global step, rank * shards + s).
      float sw[kFeatures] = {}, sb = 0, sl = 0;
      Batch(session.global_step(), rank_ * shards_ + s, [&](const float* x, float y) {
        float err = Predict(x) - y;
        sl += err * err;
        for (int i = 0; i < kFeatures; ++i) sw[i] += 2 * err * x[i];
        sb += 2 * err;
      });
      for (int i = 0; i < kFeatures; ++i) gw[i] += sw[i] / static_cast<float>(batch_);
      gb += sb / static_cast<float>(batch_);
      loss += sl / static_cast<float>(batch_);
    }
    for (int i = 0; i < kFeatures; ++i) w_.gradient.data()[i] = gw[i] / static_cast<float>(shards_);
    b_.gradient.data()[0] = gb / static_cast<float>(shards_);
    if (state_) {
      // This replica's own labels (its first sub-batch): each replica's statistics differ.
      float labels = 0;
      Batch(session.global_step(), rank_ * shards_, [&](const float*, float y) { labels += y; });
      label_mean_.value.data()[0] =
          0.9f * label_mean_.value.data()[0] + 0.1f * labels / static_cast<float>(batch_);
    }
    taas::StepResult result;
    result.loss = loss / static_cast<float>(shards_);
    return result;
  }

  absl::StatusOr<std::map<std::string, double>> evaluate(taas::Session&) override {
    if (!evaluate_error_.empty()) return absl::NotFoundError(evaluate_error_);
    double mse = 0;
    int close = 0, n = 0;
    Batch(-1, 0, [&](const float* x, float y) {  // step -1: held-out data
      double err = Predict(x) - y;
      mse += err * err;
      close += std::abs(err) < 0.5 ? 1 : 0;
      ++n;
    });
    std::map<std::string, double> metrics = {{"loss", mse / n},
                                             {"accuracy", static_cast<double>(close) / n}};
    if (state_) {
      metrics["label_mean"] = label_mean_.value.data()[0];
      metrics["frozen"] = frozen_.value.data()[0];
    }
    return metrics;
  }

  void after_train(taas::Session& session, bool is_chief) override {
    std::string w;
    for (int i = 0; i < kFeatures; ++i) w += std::to_string(w_.value.data()[i]) + " ";
    session.logger().Info("final parameters",
                          {{"chief", is_chief}, {"w", w}, {"b", b_.value.data()[0]}});
    if (state_) {
      session.logger().Info("final state",
                            {{"chief", is_chief},
                             {"label_mean", std::to_string(label_mean_.value.data()[0])},
                             {"frozen", std::to_string(frozen_.value.data()[0])}});
    }
  }

 private:
  float Predict(const float* x) const {
    float y = b_.value.data()[0];
    for (int i = 0; i < kFeatures; ++i) y += w_.value.data()[i] * x[i];
    return y;
  }

  template <class F>
  void Batch(std::int64_t step, int shard, F&& visit) const {
    std::mt19937 rng(static_cast<std::uint32_t>(step * 7919 + shard * 104729 + 17));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    float x[kFeatures];
    for (int n = 0; n < batch_; ++n) {
      float y = kTrueBias;
      for (int i = 0; i < kFeatures; ++i) {
        x[i] = normal(rng);
        y += TrueWeight(i) * x[i];
      }
      visit(x, y + 0.01f * normal(rng));
    }
  }

  taas::Variable w_, b_, label_mean_, frozen_;
  bool state_ = false;
  std::optional<float> frozen_init_;
  int shards_ = 1, batch_ = 32, step_ms_ = 0, rank_ = 0;
  float lr_ = 0.05f;
  std::string optimizer_ = "sgd";
  std::string evaluate_error_;  // --fail_evaluate
  float clip_ = 0.0f;
  std::optional<float> weight_decay_;
  std::vector<std::string> exclude_;
  std::optional<float> init_bias_;
};

}  // namespace

int main(int argc, char** argv) { return taas::RunMain<LinearRegression>(argc, argv); }
