#include "taas/testing/testing.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <random>

namespace taas::testing {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the system's temporary dir, removed with this object.
class TempDir {
 public:
  static absl::StatusOr<TempDir> Create() {
    std::string pattern = (fs::temp_directory_path() / "taas-testing-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError("cannot create a temporary dir from " + pattern + ": " +
                                 std::strerror(errno));
    }
    return TempDir(pattern);
  }
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, "")) {}
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The indices of `size` elements to check: all, or `max` of them without repeats.
std::vector<std::int64_t> ChooseElements(std::int64_t size, std::int64_t max,
                                         std::mt19937_64& rng) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(size));
  std::iota(all.begin(), all.end(), 0);
  if (size <= max) return all;
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(static_cast<std::size_t>(max));
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace

double GradientCheck::max_rel_error() const {
  double worst = 0;
  for (const auto& v : variables) worst = std::max(worst, v.max_rel_error);
  return worst;
}

absl::Status GradientCheck::Within(double tolerance) const {
  const VariableGradientError* worst = nullptr;
  for (const auto& v : variables) {
    if (!worst || v.max_rel_error > worst->max_rel_error) worst = &v;
  }
  if (!worst || worst->max_rel_error <= tolerance) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "gradient of " + worst->name + " element " + std::to_string(worst->worst_index) +
      ": train() wrote " + std::to_string(worst->analytic) + ", finite differences give " +
      std::to_string(worst->numeric) + " (relative error " + std::to_string(worst->max_rel_error) +
      " > tolerance " + std::to_string(tolerance) + ")");
}

absl::StatusOr<GradientCheck> CheckGradients(const ModelFactory& factory,
                                             const GradientCheckOptions& options) {
  if (!(options.epsilon > 0) || !std::isfinite(options.epsilon)) {
    return absl::InvalidArgumentError("CheckGradients: epsilon must be a finite number > 0, got " +
                                      std::to_string(options.epsilon));
  }
  if (options.max_elements_per_variable < 1) {
    return absl::InvalidArgumentError(
        "CheckGradients: max_elements_per_variable must be >= 1, got " +
        std::to_string(options.max_elements_per_variable));
  }
  TAAS_ASSIGN_OR_RETURN(auto local, LocalModel::Build(factory, options.model_args));
  auto loss = [&]() -> absl::StatusOr<StepResult> {
    local->SetSteps(options.global_step, options.local_step);
    if (options.before_train) options.before_train(local->model());
    return local->Train();
  };
  const std::vector<Variable*>& vars = local->variables();
  TAAS_ASSIGN_OR_RETURN(StepResult first, loss());
  std::vector<std::vector<float>> analytic;
  for (const Variable* v : vars) {
    auto g = v->gradient.values();
    analytic.emplace_back(g.begin(), g.end());
  }
  TAAS_ASSIGN_OR_RETURN(StepResult again, loss());
  if (again.loss != first.loss) {
    return absl::FailedPreconditionError(
        "CheckGradients: train() is not deterministic: loss " + std::to_string(first.loss) +
        " then " + std::to_string(again.loss) +
        " for the same variable values and steps; pick the batch from session.global_step() or "
        "use a fixed batch, or rewind the input in GradientCheckOptions::before_train");
  }
  GradientCheck check;
  check.loss = first.loss;
  std::mt19937_64 rng(options.seed);
  for (std::size_t v = 0; v < vars.size(); ++v) {
    VariableGradientError error;
    error.name = vars[v]->name;
    float* values = vars[v]->value.data();
    for (std::int64_t i :
         ChooseElements(vars[v]->value.size(), options.max_elements_per_variable, rng)) {
      const float original = values[i];
      values[i] = static_cast<float>(original + options.epsilon);
      TAAS_ASSIGN_OR_RETURN(StepResult plus, loss());
      values[i] = static_cast<float>(original - options.epsilon);
      TAAS_ASSIGN_OR_RETURN(StepResult minus, loss());
      values[i] = original;
      // The step actually taken in float32, not the one asked for.
      const double h = static_cast<double>(static_cast<float>(original + options.epsilon)) -
                       static_cast<double>(static_cast<float>(original - options.epsilon));
      const double numeric = (static_cast<double>(plus.loss) - minus.loss) / h;
      const double exact = analytic[v][static_cast<std::size_t>(i)];
      const double abs_error = std::abs(exact - numeric);
      const double rel_error =
          abs_error / std::max({std::abs(exact), std::abs(numeric), options.relative_floor});
      ++error.elements_checked;
      error.max_abs_error = std::max(error.max_abs_error, abs_error);
      if (error.elements_checked == 1 || rel_error > error.max_rel_error) {
        error.max_rel_error = rel_error;
        error.worst_index = i;
        error.analytic = exact;
        error.numeric = numeric;
      }
    }
    check.variables.push_back(std::move(error));
  }
  return check;
}

namespace {

// What RunSteps learns from inside the run: the first replica's losses and final values.
struct Recording {
  std::vector<float> losses;
  std::map<std::string, std::vector<float>> variables;
  std::map<std::string, std::vector<float>> state;
  std::int64_t global_step = 0;
  int models = 0;
};

// A step's loss: `loss`, or device_loss copied to the host (a test may wait for the device); NaN
// when that copy fails.
float LossOf(const StepResult& result) {
  if (!result.device_loss) return result.loss;
  Tensor host({1});
  return CopyInto(*result.device_loss, host).ok() ? host.data()[0]
                                                  : std::numeric_limits<float>::quiet_NaN();
}

// The user's model, unchanged, with its first replica's results recorded.
class Recorder final : public DistModel {
 public:
  Recorder(std::unique_ptr<DistModel> inner, Recording* recording, bool records)
      : inner_(std::move(inner)), recording_(recording), records_(records) {}

  absl::Status build_model(ModelBuilder& builder) override { return inner_->build_model(builder); }
  InitFn get_init_fn() override { return inner_->get_init_fn(); }
  StepResult train(Session& session) override {
    StepResult result = inner_->train(session);
    if (records_) recording_->losses.push_back(LossOf(result));
    return result;
  }
  absl::StatusOr<std::map<std::string, double>> evaluate(Session& session) override {
    return inner_->evaluate(session);
  }
  void after_train(Session& session, bool is_chief) override {
    if (records_) {
      recording_->global_step = session.global_step();
      for (const Variable* v : session.variables()) {
        auto values = v->value.values();
        recording_->variables[v->name].assign(values.begin(), values.end());
      }
      for (const Variable* s : session.state()) {
        auto values = s->value.values();
        recording_->state[s->name].assign(values.begin(), values.end());
      }
    }
    inner_->after_train(session, is_chief);
  }

 private:
  std::unique_ptr<DistModel> inner_;
  Recording* recording_;
  bool records_;
};

// The error lines of a captured log.
std::string ErrorLines(std::FILE* log) {
  std::string lines, line;
  std::rewind(log);
  for (int c; (c = std::fgetc(log)) != EOF;) {
    if (c != '\n') {
      line += static_cast<char>(c);
      continue;
    }
    if (line.find("level=error") != std::string::npos) lines += (lines.empty() ? "" : "; ") + line;
    line.clear();
  }
  return lines;
}

}  // namespace

absl::StatusOr<RunStepsResult> RunSteps(const ModelFactory& factory, std::int64_t steps,
                                        const RunStepsOptions& options) {
  if (steps < 1) {
    return absl::InvalidArgumentError("RunSteps: steps must be >= 1, got " + std::to_string(steps));
  }
  std::optional<TempDir> temp;
  std::string model_dir = options.model_dir;
  if (model_dir.empty()) {
    TAAS_ASSIGN_OR_RETURN(TempDir made, TempDir::Create());
    temp.emplace(std::move(made));
    model_dir = temp->path();
  }
  std::vector<std::string> flags = {
      "--max_steps=" + std::to_string(steps), "--model_dir=" + model_dir,
      "--save_checkpoints_secs=0",
      "--save_checkpoints_steps=" + std::to_string(options.save_checkpoints_steps)};
  flags.insert(flags.end(), options.flags.begin(), options.flags.end());
  flags.push_back("--");
  flags.insert(flags.end(), options.model_args.begin(), options.model_args.end());
  Recording recording;
  auto recorded = [&]() -> std::unique_ptr<DistModel> {
    std::unique_ptr<DistModel> model = factory();
    if (!model) return nullptr;
    return std::make_unique<Recorder>(std::move(model), &recording, recording.models++ == 0);
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> captured(nullptr, &std::fclose);
  std::FILE* log = options.log;
  if (!log) {
    captured.reset(std::tmpfile());
    if (!captured) return absl::InternalError("RunSteps: no temporary file for the log");
    log = captured.get();
  }
  const int code = RunLocalTraining(flags, recorded, log);
  if (code != kExitOk) {
    return absl::InternalError("RunSteps: the trainer exited with code " + std::to_string(code) +
                               (captured ? ": " + ErrorLines(captured.get()) : ""));
  }
  if (recording.models > 0 && recording.variables.empty()) {
    // The trainer found TRAINING_DONE at or past `steps` in the model dir and ran nothing.
    return absl::FailedPreconditionError("RunSteps: " + model_dir +
                                         " holds a run already finished at or past step " +
                                         std::to_string(steps) + ": nothing ran");
  }
  RunStepsResult result;
  result.losses = std::move(recording.losses);
  result.variables = std::move(recording.variables);
  result.state = std::move(recording.state);
  result.global_step = recording.global_step;
  return result;
}

absl::Status CheckpointRoundTrip(const ModelFactory& factory, const RoundTripOptions& options) {
  TAAS_ASSIGN_OR_RETURN(auto saved, LocalModel::Build(factory, options.model_args));
  // The variables, then the state (ModelBuilder::AddState): both are checkpointed.
  const auto registered = [](LocalModel& model) {
    std::vector<Variable*> all = model.variables();
    all.insert(all.end(), model.session().state().begin(), model.session().state().end());
    return all;
  };
  const std::vector<Variable*> a = registered(*saved);
  std::mt19937_64 rng(options.seed);
  // Trained variables in [-1, 1); state in [0.5, 1.5): positive, as a running variance or a count
  // must be for evaluate() to mean anything (BatchNorm's square root of a negative variance is
  // NaN, and NaN equals nothing, not even itself).
  std::uniform_real_distribution<float> trained(-1.0f, 1.0f);
  std::uniform_real_distribution<float> state(0.5f, 1.5f);
  const std::size_t trained_count = saved->variables().size();
  for (std::size_t v = 0; v < a.size(); ++v) {
    auto& draw = v < trained_count ? trained : state;
    for (float& x : a[v]->value.values()) x = draw(rng);
  }
  TAAS_ASSIGN_OR_RETURN(TempDir dir, TempDir::Create());
  TAAS_ASSIGN_OR_RETURN(std::string prefix, saved->SaveCheckpoint(dir.path(), 1));
  TAAS_ASSIGN_OR_RETURN(auto restored, LocalModel::Build(factory, options.model_args));
  const std::vector<Variable*> b = registered(*restored);
  for (std::size_t v = 0; v < std::max(a.size(), b.size()); ++v) {
    if (v >= a.size() || v >= b.size() || a[v]->name != b[v]->name ||
        a[v]->value.size() != b[v]->value.size()) {
      auto describe = [v](const std::vector<Variable*>& vars) {
        return v < vars.size() ? vars[v]->name + " " + ShapeString(vars[v]->value.shape())
                               : std::string("nothing");
      };
      return absl::FailedPreconditionError(
          "CheckpointRoundTrip: two instances of the model register different variables or state: "
          "at " +
          std::to_string(v) + ", " + describe(a) + " then " + describe(b) +
          " (build_model must register the same names, sizes and order every time)");
    }
  }
  TAAS_RETURN_IF_ERROR(restored->RestoreCheckpoint(dir.path()));
  for (std::size_t v = 0; v < a.size(); ++v) {
    auto x = a[v]->value.values();
    auto y = b[v]->value.values();
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::memcmp(&x[i], &y[i], sizeof(float)) != 0) {
        return absl::DataLossError("CheckpointRoundTrip: " + a[v]->name + " element " +
                                   std::to_string(i) + " was " + std::to_string(x[i]) +
                                   ", restored from " + prefix + " as " + std::to_string(y[i]));
      }
    }
  }
  if (options.compare_evaluate) {
    TAAS_ASSIGN_OR_RETURN(auto before, saved->Evaluate());
    TAAS_ASSIGN_OR_RETURN(auto after, restored->Evaluate());
    for (const auto& [name, value] : before) {
      auto found = after.find(name);
      if (found == after.end() || found->second != value) {
        return absl::FailedPreconditionError(
            "CheckpointRoundTrip: evaluate() gives " + name + "=" + std::to_string(value) +
            " on the saved model and " +
            (found == after.end() ? std::string("nothing") : std::to_string(found->second)) +
            " on the restored one: the model keeps state outside its registered variables "
            "(register "
            "it: ModelBuilder::AddState)");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace taas::testing
