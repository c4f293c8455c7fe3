// The evaluator: follows the chief's checkpoints, evaluates each new one with the model's
// evaluate(), and writes its own summaries under <model dir>/eval. It never talks to the
// parameter servers, and it can run below training's CPU priority (YieldCoresToTraining), so
// evaluation does not slow training down where they share cores.
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "internal.h"
#include "taas/checkpoint/checkpoint.h"
#include "taas/summary/event_writer.h"

namespace taas::runtime {
namespace {

namespace fs = std::filesystem;

std::optional<std::int64_t> DoneStep(const std::string& model_dir) {
  std::ifstream in(fs::path(model_dir) / kDoneMarker);
  std::int64_t step;
  if (in >> step) return step;
  return std::nullopt;
}

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
  auto built = BuildModel(ctx);
  if (!built) return kExitModelError;
  Session::State state;
  state.info = &info;
  state.logger = &ctx.logger;
  Session session(&state);
  std::unique_ptr<summary::EventWriter> events;

  // Training may checkpoint rarely: allow at least three checkpoint periods between new ones.
  const double patience = std::max(cfg.wait_timeout_secs, 3 * cfg.save_checkpoints_secs);
  auto last_new = std::chrono::steady_clock::now();
  std::int64_t evaluated = -1;
  bool logged_wait = false;
  while (true) {
    auto latest = checkpoint::LatestStep(info.model_dir);
    if (latest && *latest > evaluated) {
      std::vector<std::string> skipped;
      auto ckpt = checkpoint::LoadLatest(info.model_dir, &skipped);
      if (!ckpt.ok() || !ckpt->has_value()) {
        // Deleted under us (keep-K) or being replaced: look again shortly.
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      const auto& c = **ckpt;
      bool complete = true;
      for (auto* v : built->state.variables) {
        const auto* entry = c.Find(v->name);
        if (!entry || static_cast<std::int64_t>(entry->values.size()) != v->value.size()) {
          ctx.logger.Error("checkpoint does not match the model",
                           {{"checkpoint", c.path}, {"variable", v->name}});
          complete = false;
          break;
        }
        std::copy(entry->values.begin(), entry->values.end(), v->value.data());
      }
      if (!complete) return kExitModelError;
      state.global_step = c.global_step;
      built->global_step = c.global_step;
      const auto start = std::chrono::steady_clock::now();
      auto results = built->model->evaluate(session);
      summary::Scalars scalars;
      std::string line;
      for (const auto& [name, value] : results) {
        scalars.emplace_back(name, static_cast<float>(value));
        line += (line.empty() ? "" : " ") + name + "=" + std::to_string(value);
        if (name == "accuracy") ctx.gauges->Set("taas_eval_accuracy", value);
      }
      ctx.gauges->Set("taas_global_step", static_cast<double>(c.global_step));
      if (!scalars.empty()) {
        if (!events) {
          auto writer = summary::EventWriter::Create((fs::path(info.model_dir) / "eval").string());
          if (writer.ok()) events = std::move(*writer);
        }
        if (events) {
          absl::Status s = events->WriteSummary(c.global_step, scalars);
          if (!s.ok()) ctx.logger.Warning("cannot write summaries", {{"error", s.ToString()}});
        }
      }
      ctx.logger.Info("evaluated checkpoint", {{"checkpoint", c.path},
                                               {"global_step", c.global_step},
                                               {"metrics", line},
                                               {"secs", SecondsSince(start)}});
      evaluated = c.global_step;
      last_new = std::chrono::steady_clock::now();
      logged_wait = false;
    }
    auto done = DoneStep(info.model_dir);
    if ((done && evaluated >= *done) || evaluated >= info.max_steps) {
      ctx.logger.Info("training is over and its last checkpoint is evaluated",
                      {{"global_step", evaluated}});
      return kExitOk;
    }
    if (SecondsSince(last_new) > patience) {
      ctx.logger.Error("no new checkpoint for too long",
                       {{"waited_secs", SecondsSince(last_new)}, {"model_dir", info.model_dir}});
      return kExitTransient;
    }
    if (!logged_wait) {
      ctx.logger.Info("waiting for a new checkpoint",
                      {{"model_dir", info.model_dir}, {"last_evaluated", evaluated}});
      logged_wait = true;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(cfg.eval_interval_secs));
  }
}

}  // namespace taas::runtime
