// The evaluator: follows the chief's checkpoints, evaluates each new one with the model's
// evaluate(), and writes its own summaries under <model dir>/eval. It never talks to the
// parameter servers, and it can run below training's CPU priority (YieldCoresToTraining), so
// evaluation does not slow training down where they share cores.
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "chief.h"
#include "exit_code.h"
#include "internal.h"
#include "taas/checkpoint/checkpoint.h"
#include "taas/contract/metric_names.h"
#include "taas/summary/event_writer.h"

namespace taas::runtime {
namespace {

namespace fs = std::filesystem;

// How long the evaluator's poll sleeps at most between two looks at a termination signal.
constexpr std::chrono::milliseconds kTerminationCheck{250};

}  // namespace

int YieldCoresToTraining(const config::RuntimeConfig& config, const Logger& logger) {
  errno = 0;
  const int current = ::getpriority(PRIO_PROCESS, 0);
  if (errno != 0 || current >= config.evaluator_nice) return current;
  if (::setpriority(PRIO_PROCESS, 0, config.evaluator_nice) != 0) {
    logger.Warning("cannot lower the evaluator's CPU priority",
                   {{"nice", config.evaluator_nice}, {"error", std::strerror(errno)}});
    return current;
  }
  return config.evaluator_nice;
}

int RunEvaluator(Context& ctx) {
  const auto& cfg = *ctx.config;
  const auto& info = cfg.info;
  auto built_or = BuildModel(ctx, ctx.config->info);
  if (!built_or.ok()) {
    return Exit(ctx.logger, 0, FailureSource::kModel, "build_model failed", built_or.status());
  }
  BuiltModel& built = **built_or;
  Session::State state;
  state.info = &info;
  state.logger = &ctx.logger;
  state.variables = &built.state.variables;
  state.states = &built.state.states;
  state.replica = built.replica.get();
  Session session(&state);
  std::unique_ptr<summary::EventWriter> events;

  // Training may checkpoint rarely: allow at least three checkpoint periods between new ones.
  const double patience = std::max(cfg.wait_timeout_secs, 3 * cfg.save_checkpoints_secs);
  auto last_new = std::chrono::steady_clock::now();
  std::int64_t evaluated = -1;
  std::map<std::string, double> last_results;  // evaluate()'s of the checkpoint at `evaluated`
  bool logged_wait = false;
  std::string last_skipped;
  while (true) {
    // The checkpoint the chief saves on the same signal is evaluated after the restart.
    if (auto deadline = TerminationRequested(ctx)) {
      return ExitTerminated(ctx, *deadline, evaluated, "the evaluation in flight finished");
    }
    auto latest = checkpoint::LatestStep(info.model_dir);
    std::vector<std::string> skipped;
    if (latest && *latest > evaluated) {
      auto ckpt = checkpoint::LoadLatest(info.model_dir, &skipped);
      // A checkpoint being replaced or deleted (keep-K) is retried at the next poll; one that
      // stays corrupt ends with the wait below, the reason in its line.
      if (!skipped.empty() && skipped.back() != last_skipped) {
        last_skipped = skipped.back();
        ctx.logger.Warning("skipping a checkpoint that does not verify", {{"error", last_skipped}});
      }
      if (ckpt.ok() && ckpt->has_value() && (*ckpt)->global_step > evaluated) {
        const auto& c = **ckpt;
        absl::Status restored = RestoreVariables(c, built.state.variables);
        if (restored.ok()) restored = RestoreState(c, built.state.states, ctx.logger);
        if (absl::Status s = restored; !s.ok()) {
          return Exit(ctx.logger, ctx.global_step, FailureSource::kData,
                      "cannot evaluate a checkpoint", s);
        }
        state.global_step = c.global_step;
        built.global_step = c.global_step;
        ctx.global_step = c.global_step;
        const auto start = std::chrono::steady_clock::now();
        built.replica->ValuesChangedOnHost();
        built.replica->StateChangedOnHost();
        using Metrics = absl::StatusOr<std::map<std::string, double>>;
        const absl::Status on_device = built.replica->Synchronize();
        Metrics results =
            on_device.ok() ? EvaluateModel(*built.model, session) : Metrics(on_device);
        // A checkpoint it cannot score ends the evaluator (the model's failure), as one that
        // stays corrupt does: the next would most likely fail the same way (the same test set),
        // and skipping it would leave the job's result to a score of an older checkpoint.
        if (!results.ok()) {
          return Exit(ctx.logger, c.global_step, FailureSource::kModel, "evaluate() failed",
                      results.status());
        }
        ctx.gauges->Set(contract::kGlobalStepMetric, static_cast<double>(c.global_step));
        const std::string line = PublishEvaluation(
            ctx, events, (fs::path(info.model_dir) / "eval").string(), c.global_step, *results);
        ctx.logger.Info("evaluated checkpoint", {{"checkpoint", c.path},
                                                 {"global_step", c.global_step},
                                                 {"metrics", line},
                                                 {"secs", SecondsSince(start)}});
        evaluated = c.global_step;
        last_results = *std::move(results);
        last_new = std::chrono::steady_clock::now();
        logged_wait = false;
      }
    }
    auto done = DoneStep(info.model_dir);
    if ((done && evaluated >= *done) || evaluated >= info.max_steps) {
      ctx.logger.Info("training is over and its last checkpoint is evaluated",
                      {{"global_step", evaluated}});
      // Its score of the final checkpoint is the job's result when the chief reports none
      // (job_report::JobResult), as train_and_evaluate's last evaluation is.
      session.ReportFinalMetrics(last_results);
      PublishJobReport(ctx, evaluated, state.final_metrics);
      return kExitOk;
    }
    if (done && latest && *latest >= *done && !skipped.empty()) {
      // No newer checkpoint can come: waiting, or a restart, cannot help.
      return Exit(ctx.logger, ctx.global_step, FailureSource::kData,
                  "training is over but its last checkpoint does not verify",
                  absl::DataLossError(skipped.front()));
    }
    if (SecondsSince(last_new) > patience) {
      const std::string why =
          last_skipped.empty() ? "" : "; the newest does not verify: " + last_skipped;
      return Exit(ctx.logger, ctx.global_step, FailureSource::kWait, "gave up waiting",
                  absl::DeadlineExceededError(
                      "no new checkpoint in " + info.model_dir + " for " +
                      std::to_string(SecondsSince(last_new)) + " s (the longer of " +
                      "TAAS_WAIT_TIMEOUT_SECS and 3 x TF_SAVE_CHECKPOINTS_SECS)" + why));
    }
    if (!logged_wait) {
      ctx.logger.Info("waiting for a new checkpoint",
                      {{"model_dir", info.model_dir}, {"last_evaluated", evaluated}});
      logged_wait = true;
    }
    // In slices, so that a termination signal ends the wait within one (the loop's first check).
    const auto wake = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(cfg.eval_interval_secs));
    while (std::chrono::steady_clock::now() < wake && !TerminationRequested(ctx)) {
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          kTerminationCheck, wake - std::chrono::steady_clock::now()));
    }
  }
}

}  // namespace taas::runtime
