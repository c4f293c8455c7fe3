#include "chief.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "exit_code.h"
#include "taas/contract/env.h"
#include "taas/contract/metric_names.h"
#include "taas/job_report/job_report.h"

namespace taas::runtime {

absl::StatusOr<TrainingState> LoadTrainingState(Context& ctx, BuiltModel& built, Session& session,
                                                Session::State& session_state, int slot_count,
                                                bool first_time, std::int64_t fallback_step) {
  const std::vector<Variable*>& vars = built.state.variables;
  const TrainerInfo& info = ctx.config->info;
  TrainingState state;
  state.values.resize(vars.size());
  state.slots.resize(vars.size());

  std::vector<std::string> skipped;
  TAAS_ASSIGN_OR_RETURN(auto ckpt, checkpoint::LoadLatest(info.model_dir, &skipped));
  // The state is the chief's own: on a device, the host state comes up to date before it is
  // restored over, read by the init fn or kept (a restore with no checkpoint).
  TAAS_RETURN_IF_ERROR(built.replica->StateToHost());
  built.replica->StateChangedOnHost();
  for (const auto& s : skipped) {
    ctx.logger.Warning("skipping a checkpoint that does not verify", {{"error", s}});
  }
  InitFn init_fn;
  if (first_time) {
    absl::Status got = CallModel("get_init_fn()", [&] {
      init_fn = built.model->get_init_fn();
      return absl::OkStatus();
    });
    if (!got.ok()) return absl::InvalidArgumentError(got.message());
  }
  if (ckpt) {
    for (std::size_t v = 0; v < vars.size(); ++v) {
      const auto* entry = ckpt->Find(vars[v]->name);
      if (!entry) {
        return absl::InvalidArgumentError("checkpoint " + ckpt->path + " has no variable " +
                                          vars[v]->name + ": it belongs to another model");
      }
      if (static_cast<std::int64_t>(entry->values.size()) != vars[v]->value.size()) {
        return absl::InvalidArgumentError("checkpoint " + ckpt->path + " holds " +
                                          std::to_string(entry->values.size()) + " elements for " +
                                          vars[v]->name + ", the model " +
                                          std::to_string(vars[v]->value.size()));
      }
      state.values[v] = entry->values;
      for (int k = 0; k < slot_count; ++k) {
        const auto* slot = ckpt->Find(vars[v]->name + "/slot_" + std::to_string(k));
        state.slots[v].push_back(slot && slot->values.size() == entry->values.size()
                                     ? slot->values
                                     : std::vector<float>(entry->values.size(), 0.0f));
      }
    }
    TAAS_RETURN_IF_ERROR(RestoreState(*ckpt, built.state.states, ctx.logger));
    state.global_step = ckpt->global_step;
    state.from_checkpoint = true;
    ctx.logger.Info("restoring variables from checkpoint",
                    {{"checkpoint", ckpt->path}, {"global_step", state.global_step}});
    if (init_fn) {
      ctx.logger.Info(
          "a checkpoint of this job exists: it wins over the init fn (warm start "
          "skipped)");
    }
    return state;
  }
  if (first_time && init_fn) {
    session_state.global_step = 0;
    absl::Status s = CallModel("the init fn", [&] { return init_fn(session); });
    // Whatever its code, the init fn's failure is the model's: never retried as a peer's.
    if (!s.ok()) return absl::InvalidArgumentError("init fn failed: " + s.ToString());
    ctx.logger.Info("no checkpoint: variables initialised and the init fn ran (warm start)");
  } else if (first_time) {
    ctx.logger.Info("no checkpoint: variables initialised by the model's initialisers");
  } else {
    state.global_step = fallback_step;
    ctx.logger.Warning(
        "no checkpoint to restore from: re-initialising the parameter servers "
        "with the chief's last pulled values",
        {{"global_step", fallback_step}});
  }
  for (std::size_t v = 0; v < vars.size(); ++v) {
    auto src = vars[v]->value.values();
    state.values[v].assign(src.begin(), src.end());
    state.slots[v].assign(static_cast<std::size_t>(slot_count), std::vector<float>(src.size()));
  }
  return state;
}

std::vector<checkpoint::Entry> CheckpointEntries(const std::vector<Variable*>& variables,
                                                 const std::vector<Variable*>& states,
                                                 TrainingState state) {
  std::vector<checkpoint::Entry> entries;
  for (std::size_t v = 0; v < variables.size(); ++v) {
    // Recorded for warm starts from this checkpoint, which check shapes, not only sizes.
    const Shape& shape = variables[v]->value.shape();
    entries.push_back({variables[v]->name, std::move(state.values[v]), shape});
    for (std::size_t k = 0; k < state.slots[v].size(); ++k) {
      entries.push_back(
          {variables[v]->name + "/slot_" + std::to_string(k), std::move(state.slots[v][k]), shape});
    }
  }
  for (const Variable* s : states) {
    auto values = s->value.values();
    entries.push_back({s->name, {values.begin(), values.end()}, s->value.shape()});
  }
  return entries;
}

namespace {

// OK when `entry` fits `v`: its shape when the checkpoint recorded one, else its element count.
// Otherwise InvalidArgument naming the checkpoint, the variable and both shapes.
absl::Status CheckEntryFits(const checkpoint::Checkpoint& c, const checkpoint::Entry& entry,
                            const Variable& v, std::string_view what) {
  const bool fits = entry.shape ? *entry.shape == v.value.shape()
                                : static_cast<std::int64_t>(entry.values.size()) == v.value.size();
  if (fits) return absl::OkStatus();
  const std::string held =
      entry.shape ? ShapeString(*entry.shape) : std::to_string(entry.values.size()) + " elements";
  return absl::InvalidArgumentError(
      "checkpoint " + c.path + " does not match the model: " + std::string(what) + " " + v.name +
      " is " + held + " in the checkpoint, " + ShapeString(v.value.shape()) + " in the model");
}

}  // namespace

absl::Status RestoreVariables(const checkpoint::Checkpoint& c,
                              const std::vector<Variable*>& variables) {
  for (auto* v : variables) {
    const auto* entry = c.Find(v->name);
    if (!entry) {
      return absl::InvalidArgumentError("checkpoint " + c.path +
                                        " does not match the model: no variable " + v->name);
    }
    TAAS_RETURN_IF_ERROR(CheckEntryFits(c, *entry, *v, "variable"));
    std::copy(entry->values.begin(), entry->values.end(), v->value.data());
  }
  return absl::OkStatus();
}

absl::Status RestoreState(const checkpoint::Checkpoint& c, const std::vector<Variable*>& states,
                          const Logger& logger) {
  std::vector<const checkpoint::Entry*> entries;
  std::string missing;
  for (const Variable* s : states) {
    const checkpoint::Entry* entry = c.Find(s->name);
    if (entry) TAAS_RETURN_IF_ERROR(CheckEntryFits(c, *entry, *s, "state"));
    if (!entry) missing += (missing.empty() ? "" : ",") + s->name;
    entries.push_back(entry);
  }
  if (!missing.empty()) {
    logger.Warning(
        "the checkpoint holds no entry for some state (written before the model registered it): "
        "it keeps the values it has (build_model's when training starts)",
        {{"checkpoint", c.path}, {"state", missing}});
  }
  for (std::size_t i = 0; i < states.size(); ++i) {
    if (entries[i] != nullptr) {
      std::copy(entries[i]->values.begin(), entries[i]->values.end(), states[i]->value.data());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<float> HostLoss(const StepResult& result) {
  if (!result.device_loss) return result.loss;
  Tensor host({1});
  TAAS_RETURN_IF_ERROR(CopyInto(*result.device_loss, host));
  return host.data()[0];
}

absl::StatusOr<std::map<std::string, float>> HostScalars(const StepResult& result) {
  std::map<std::string, float> scalars = result.scalars;
  for (const auto& [name, value] : result.device_scalars) {
    Tensor host({1});
    TAAS_RETURN_IF_ERROR(CopyInto(value, host));
    scalars[name] = host.data()[0];
  }
  return scalars;
}

ChiefSchedule::ChiefSchedule(Context& ctx, const std::vector<Variable*>& variables,
                             ReplicaState& replica, const optim::Optimizer& optimizer,
                             SaveCheckpoint save)
    : ctx_(ctx),
      variables_(variables),
      replica_(replica),
      optimizer_(optimizer),
      save_(std::move(save)),
      checkpoints_(ctx.config->save_checkpoints_steps, ctx.config->save_checkpoints_secs),
      summaries_(ctx.config->save_summaries_steps, ctx.config->save_summaries_secs) {}

void ChiefSchedule::Start(std::int64_t global_step, std::int64_t checkpoint_step) {
  auto writer = summary::EventWriter::Create(ctx_.config->info.model_dir);
  if (writer.ok()) {
    events_ = std::move(*writer);
  } else {
    ctx_.logger.Warning("no TensorBoard summaries", {{"error", writer.status().ToString()}});
  }
  summaries_ =
      StepsOrSecsSchedule(ctx_.config->save_summaries_steps, ctx_.config->save_summaries_secs);
  window_step_ = global_step;
  window_start_ = Clock::now();
  CheckpointIsAt(checkpoint_step);
}

void ChiefSchedule::CheckpointIsAt(std::int64_t global_step) {
  last_checkpoint_step_ = global_step;
  // Without a checkpoint the steps count from 0, as the global step does.
  checkpoints_.Happened(std::max<std::int64_t>(global_step, 0));
}

void ChiefSchedule::AfterStep(std::int64_t global_step, std::int64_t examples, const ReadLoss& loss,
                              const StepResult& result) {
  window_examples_ += examples;
  const Clock::time_point now = Clock::now();
  if (events_ && summaries_.Due(global_step, now)) {
    WriteSummary(global_step, loss, result);
    summaries_.Happened(global_step, now);
    window_start_ = now;
    window_step_ = global_step;
    window_examples_ = 0;
  }
  if (global_step != last_checkpoint_step_ && checkpoints_.Due(global_step, now)) {
    absl::Status s = save_(global_step);
    if (!s.ok()) {
      // Try again when due again; a PS that lost its variables is noticed by the next pull.
      ctx_.logger.Warning("checkpoint failed", {{"error", s.ToString()}});
      checkpoints_.RestartSeconds(now);
    }
  }
}

void ChiefSchedule::WriteSummary(std::int64_t global_step, const ReadLoss& loss,
                                 const StepResult& result) {
  const double secs = std::max(SecondsSince(window_start_), 1e-9);
  absl::StatusOr<float> step_loss = loss();
  absl::StatusOr<std::map<std::string, float>> extra = HostScalars(result);
  absl::Status read = step_loss.ok() ? extra.status() : step_loss.status();
  // The variables as this replica holds them after the step, brought to the host.
  if (read.ok() && ctx_.config->summary_histograms) read = replica_.ValuesToHost();
  if (!read.ok()) {
    ctx_.logger.Warning("cannot read the summaries' values", {{"error", read.ToString()}});
    return;
  }
  summary::Scalars scalars = {
      {"loss", *step_loss},
      {"learning_rate", optimizer_.LearningRate(global_step)},
      {"examples_per_sec", static_cast<float>(static_cast<double>(window_examples_) / secs)},
      {"global_step/sec",
       static_cast<float>(static_cast<double>(global_step - window_step_) / secs)}};
  for (const auto& [tag, value] : *extra) scalars.emplace_back(tag, value);
  summary::Histograms histograms;
  if (ctx_.config->summary_histograms) {
    for (const Variable* v : variables_) {
      histograms.emplace_back(v->name, summary::Histogram::Of(v->value.values()));
    }
  }
  absl::Status s = events_->WriteSummary(global_step, scalars, histograms);
  if (!s.ok()) ctx_.logger.Warning("cannot write summaries", {{"error", s.ToString()}});
}

std::string PublishEvaluation(Context& ctx, std::unique_ptr<summary::EventWriter>& events,
                              const std::string& dir, std::int64_t global_step,
                              const std::map<std::string, double>& metrics) {
  summary::Scalars scalars;
  std::string line;
  for (const auto& [name, value] : metrics) {
    scalars.emplace_back(name, static_cast<float>(value));
    line += (line.empty() ? "" : " ") + name + "=" + std::to_string(value);
    if (name == "accuracy") ctx.gauges->Set(contract::kEvalAccuracyMetric, value);
  }
  if (scalars.empty()) return line;
  if (!events) {
    auto writer = summary::EventWriter::Create(dir);
    if (!writer.ok()) {
      ctx.logger.Warning("no TensorBoard summaries", {{"error", writer.status().ToString()}});
      return line;
    }
    events = std::move(*writer);
  }
  absl::Status w = events->WriteSummary(global_step, scalars);
  if (!w.ok()) ctx.logger.Warning("cannot write summaries", {{"error", w.ToString()}});
  return line;
}

ChiefEvaluation::ChiefEvaluation(Context& ctx, DistModel& model, Session& session,
                                 Session::State& state)
    : ctx_(ctx), model_(model), session_(session), state_(state) {}

void ChiefEvaluation::Start(std::int64_t global_step) {
  const std::int64_t every = ctx_.config->eval_on_chief_steps;
  if (every > 0) next_step_ = (global_step / every + 1) * every;
}

absl::Status ChiefEvaluation::AfterStep(std::int64_t global_step) {
  const std::int64_t every = ctx_.config->eval_on_chief_steps;
  if (every <= 0 || global_step < next_step_) return absl::OkStatus();
  next_step_ = (global_step / every + 1) * every;
  return Evaluate(global_step, /*final=*/false);
}

absl::Status ChiefEvaluation::AtEnd(std::int64_t global_step) {
  if (!ctx_.config->eval_on_chief) return absl::OkStatus();
  if (global_step == last_step_) {
    session_.ReportFinalMetrics(last_metrics_);
    return absl::OkStatus();
  }
  return Evaluate(global_step, /*final=*/true);
}

absl::Status ChiefEvaluation::Evaluate(std::int64_t global_step, bool final) {
  state_.global_step = global_step;
  const auto start = std::chrono::steady_clock::now();
  TAAS_RETURN_IF_ERROR(state_.replica->Synchronize());
  absl::StatusOr<std::map<std::string, double>> evaluated = EvaluateModel(model_, session_);
  if (!evaluated.ok()) {
    // The chief exits with the model's failure; its report says why, so the job's result names
    // the error rather than "no final metrics".
    WriteJobReport(
        ctx_, {global_step, {}, "evaluate() failed: " + std::string(evaluated.status().message())});
    return evaluated.status();
  }
  const std::map<std::string, double>& metrics = *evaluated;
  last_step_ = global_step;
  last_metrics_ = metrics;
  if (final) session_.ReportFinalMetrics(metrics);
  const std::string line = PublishEvaluation(
      ctx_, events_, (std::filesystem::path(ctx_.config->info.model_dir) / kChiefEvalDir).string(),
      global_step, metrics);
  ctx_.logger.Info(
      "evaluated on the chief",
      {{"global_step", global_step}, {"metrics", line}, {"secs", SecondsSince(start)}});
  return absl::OkStatus();
}

void ChiefSchedule::WriteScalars(std::int64_t global_step, const summary::Scalars& scalars) {
  if (!events_ || scalars.empty()) return;
  absl::Status s = events_->WriteSummary(global_step, scalars);
  if (!s.ok()) ctx_.logger.Warning("cannot write summaries", {{"error", s.ToString()}});
}

void PublishJobReport(Context& ctx, std::int64_t global_step,
                      const std::map<std::string, double>& metrics) {
  std::string line;
  std::vector<metrics::Gauges::Sample> samples;
  for (const auto& [name, value] : metrics) {
    line += (line.empty() ? "" : " ") + name + "=" + std::to_string(value);
    samples.push_back({{{std::string(contract::kFinalMetricLabel), name}}, value});
  }
  ctx.logger.Info("final metrics", {{"global_step", global_step}, {"metrics", line}});
  ctx.gauges->SetLabeled(contract::kFinalMetric, "The job's final metrics, once training ended",
                         samples);
  WriteJobReport(ctx, {global_step, metrics, {}});
}

void WriteJobReport(Context& ctx, const job_report::JobReport& report) {
  std::string path = ctx.config->termination_message_path;
  std::error_code ec;
  if (path.empty() &&
      std::filesystem::exists(std::string(contract::kKubernetesTerminationMessagePath), ec)) {
    path = contract::kKubernetesTerminationMessagePath;
  }
  if (path.empty()) return;
  std::ofstream out(path, std::ios::trunc);
  out << job_report::Format(report);
  out.flush();
  if (!out) {
    ctx.logger.Warning("cannot write the job's report", {{"path", path}});
  }
}

void PublishFinalMetrics(Context& ctx, ChiefSchedule& schedule, std::int64_t global_step,
                         const std::map<std::string, double>& metrics) {
  summary::Scalars scalars;
  for (const auto& [name, value] : metrics) {
    scalars.emplace_back("final/" + name, static_cast<float>(value));
  }
  schedule.WriteScalars(global_step, scalars);
  PublishJobReport(ctx, global_step, metrics);
}

bool TrainingAlreadyDone(const TrainerInfo& info, const Logger& logger) {
  auto done = DoneStep(info.model_dir);
  if (!done || *done < info.max_steps) return false;
  logger.Info("training already finished: nothing to do",
              {{"done_at_step", *done}, {"max_steps", info.max_steps}});
  return true;
}

void MarkTrainingDone(const TrainerInfo& info, std::int64_t global_step) {
  std::ofstream marker(std::filesystem::path(info.model_dir) / contract::kTrainingDoneFile);
  marker << global_step << "\n";
}

}  // namespace taas::runtime
