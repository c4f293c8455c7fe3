// The training replicas under all-reduce (Strategy::kCollective, TensorFlow's
// MultiWorkerMirroredStrategy): every worker holds every variable and its optimizer slots. The
// chief starts training (restore, warm start or initialisers) and broadcasts the state; then each
// step every model replica runs train(), the gradients are averaged over all replicas of the job
// (in process across a worker's replicas, then around the TCP ring across workers), and every
// replica applies the same update to its own copy. The chief's first replica writes checkpoints
// and summaries from its copy; every few steps the replicas compare a checksum of their variables.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "chief.h"
#include "exit_code.h"
#include "internal.h"
#include "progress.h"
#include "taas/collective/buckets.h"
#include "taas/collective/device_collective.h"
#include "taas/collective/in_process.h"
#include "taas/collective/tcp_ring.h"
#include "taas/contract/metric_names.h"
#include "taas/crc32c/crc32c.h"

namespace taas::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using collective::Collective;
using collective::ReduceOp;

// What ends a replica's training early: logged once, by the worker, with its exit code.
struct Failure {
  FailureSource source;
  std::string cause;
  absl::Status status;
};

// Floats all-reduced (mean) after the gradients every step: the mean loss, whether any replica's
// train() asked to stop (> 0), and the mean examples per replica.
enum Control { kLoss, kStop, kExamples, kControlCount };

// One model replica of this worker, driven by its own thread.
struct Replica {
  TrainerInfo info;
  std::unique_ptr<BuiltModel> built;
  Session::State session_state;
  Session session{&session_state};
  std::vector<std::vector<std::vector<float>>> slots;  // [variable][slot][element]
  Collective* collective = nullptr;
  // On a device whose engine registered a collective (NCCL for CUDA): the group `collective`
  // then points at, formed over the CPU group. Set under CollectiveTrainer::device_mu_.
  std::unique_ptr<collective::DeviceCollective> device_collective;
};

// One step of one replica, as the progress line and the chief's summaries see it.
struct StepRecord {
  StepResult result;
  std::array<float, kControlCount> control{};  // reduced over every replica of the job
  StepTimes times;
};

class CollectiveTrainer {
 public:
  explicit CollectiveTrainer(Context& ctx) : ctx_(ctx), cfg_(*ctx.config), info_(cfg_.info) {}

  int Run();

 private:
  std::optional<Failure> BuildReplicas();
  std::optional<Failure> FormGroup();
  // Replaces the replica's CPU group by its device's collective when every replica of the job
  // is on such a device; each replica's thread joins at the same time.
  std::optional<Failure> JoinDeviceGroup(Replica& replica);
  // A replica's whole life once the group formed: start state, steps, finish.
  std::optional<Failure> RunReplica(Replica& replica);
  // The chief's first replica loads the start state; every replica receives it.
  std::optional<Failure> ShareStartState(Replica& replica);
  // train() -> all-reduce the gradients -> apply the update to this replica's copy.
  std::optional<Failure> Step(Replica& replica, collective::BucketedAllReduce& reduce,
                              StepRecord& record);
  void Report(std::int64_t local_step, const StepRecord& record, float learning_rate,
              ProgressWindow& window);
  std::optional<Failure> CheckVariablesAgree(Replica& replica);
  std::optional<Failure> Finish(Replica& replica, bool stopped_by_model);
  absl::Status SaveCheckpoint(Replica& replica, std::int64_t global_step);

  // The first replica of the chief: it initialises, checkpoints and writes summaries.
  bool IsChief(const Replica& replica) const {
    return info_.is_chief && replica.info.replica_in_worker == 0;
  }
  // The first replica of each worker reports progress, sets the gauges and calls after_train.
  static bool Reports(const Replica& replica) { return replica.info.replica_in_worker == 0; }
  void SetGlobalStep(std::int64_t global_step);

  Context& ctx_;
  const config::RuntimeConfig& cfg_;
  const TrainerInfo& info_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<Collective> ring_;                   // across workers; null for one worker
  std::unique_ptr<collective::InProcessGroup> group_;  // the worker's replicas
  std::unique_ptr<ChiefSchedule> schedule_;            // the chief's first replica's
  std::unique_ptr<ChiefEvaluation> evaluation_;        // the chief's first replica's
  std::mutex device_mu_;  // guards each replica's device_collective (set on its thread, aborted
                          // from the failing one's)
};

int CollectiveTrainer::Run() {
  std::optional<Failure> failure = BuildReplicas();
  if (!failure && TrainingAlreadyDone(info_, ctx_.logger)) return kExitOk;
  if (!failure) failure = FormGroup();
  if (!failure) {
    // The first failure wins: it aborts the group, so the worker's other replicas stop at once
    // with a status that only echoes it.
    std::mutex mu;
    auto run = [&](Replica& replica) {
      if (std::optional<Failure> ended = RunReplica(replica)) {
        std::lock_guard lock(mu);
        if (!failure) {
          failure = std::move(ended);
          if (group_) group_->Abort(failure->status);
          std::lock_guard device_lock(device_mu_);
          for (auto& r : replicas_) {
            if (r->device_collective) r->device_collective->Abort(failure->status);
          }
        }
      }
      // A device group is destroyed on its replica's thread, as the others are on theirs: NCCL's
      // destroy waits for the other ranks of the node.
      std::unique_ptr<collective::DeviceCollective> device;
      std::lock_guard device_lock(device_mu_);
      device = std::move(replica.device_collective);
    };
    std::vector<std::thread> threads;
    for (std::size_t r = 1; r < replicas_.size(); ++r) {
      threads.emplace_back([&, r] { run(*replicas_[r]); });
    }
    run(*replicas_[0]);
    for (auto& thread : threads) thread.join();
  }
  if (!failure) return kExitOk;
  return Exit(ctx_.logger, ctx_.global_step, failure->source, failure->cause, failure->status);
}

std::optional<Failure> CollectiveTrainer::BuildReplicas() {
  for (int r = 0; r < info_.replicas_per_worker; ++r) {
    auto replica = std::make_unique<Replica>();
    replica->info = info_;
    replica->info.replica_in_worker = r;
    // The device RunMain chose for this replica (the host where nothing chose: a test's driver).
    const auto index = static_cast<std::size_t>(r);
    replica->info.device = index < cfg_.devices.size() ? cfg_.devices[index] : Device::Cpu();
    auto built = BuildModel(ctx_, replica->info);
    if (!built.ok()) return Failure{FailureSource::kModel, "build_model failed", built.status()};
    replica->built = std::move(*built);
    replica->session_state.info = &replica->info;
    replica->session_state.logger = &ctx_.logger;
    replica->session_state.variables = &replica->built->state.variables;
    replica->session_state.placement = replica->built->placement.get();
    replicas_.push_back(std::move(replica));
  }
  // Every replica must hold the same variables, or the buckets would mix them.
  const auto& first = replicas_[0]->built->state.variables;
  for (const auto& replica : replicas_) {
    const auto& vars = replica->built->state.variables;
    for (std::size_t v = 0; v < std::max(vars.size(), first.size()); ++v) {
      if (v >= vars.size() || v >= first.size() || vars[v]->name != first[v]->name ||
          vars[v]->value.size() != first[v]->value.size()) {
        return Failure{
            FailureSource::kModel, "build_model failed",
            absl::InvalidArgumentError(
                "replica " + std::to_string(replica->info.replica_in_worker) +
                " registered other variables than replica 0 (variable " + std::to_string(v) +
                "): build_model must register the same variables in every replica")};
      }
    }
  }
  // BuildModel validated the optimizer settings: creating it cannot fail here.
  optimizer_ = std::move(optim::CreateOptimizer(replicas_[0]->built->state.optimizer)).value();
  for (auto& replica : replicas_) {
    for (const Variable* v : replica->built->state.variables) {
      replica->slots.emplace_back(static_cast<std::size_t>(optimizer_->slot_count()),
                                  std::vector<float>(static_cast<std::size_t>(v->value.size())));
    }
  }
  return std::nullopt;
}

std::optional<Failure> CollectiveTrainer::FormGroup() {
  const auto start = Clock::now();
  if (info_.num_workers > 1) {
    collective::TcpRingOptions options;
    options.addresses = cfg_.worker_addresses;
    options.rank = info_.worker_rank;
    options.bind_host = BindHost(cfg_);
    options.token = cfg_.job_token;
    options.timeout_secs = cfg_.wait_timeout_secs;
    options.chunk_bytes = cfg_.allreduce_chunk_bytes;
    auto ring = collective::ConnectTcpRing(options, ctx_.logger);
    if (!ring.ok()) {
      return Failure{FailureSource::kPeer, "cannot form the all-reduce ring", ring.status()};
    }
    ring_ = std::move(*ring);
  }
  if (info_.replicas_per_worker > 1 || !ring_) {
    collective::InProcessOptions options;
    options.members = info_.replicas_per_worker;
    options.cross = std::move(ring_);
    options.timeout_secs = cfg_.wait_timeout_secs;
    auto group = collective::InProcessGroup::Create(std::move(options));
    if (!group.ok()) return Failure{FailureSource::kConfig, "invalid replicas", group.status()};
    group_ = std::move(*group);
    for (int r = 0; r < group_->members(); ++r) {
      replicas_[static_cast<std::size_t>(r)]->collective = &group_->member(r);
    }
  } else {
    replicas_[0]->collective = ring_.get();
  }
  std::string devices;
  for (const auto& replica : replicas_) {
    devices += (devices.empty() ? "" : ",") + DeviceName(replica->info.device);
  }
  std::int64_t bytes = 0;
  for (const Variable* v : replicas_[0]->built->state.variables) {
    bytes += static_cast<std::int64_t>(sizeof(float)) * v->value.size();
  }
  ctx_.logger.Info("all-reduce group formed", {{"group", replicas_[0]->collective->Describe()},
                                               {"replicas_in_sync", info_.num_replicas_in_sync()},
                                               {"replicas_per_worker", info_.replicas_per_worker},
                                               {"devices", devices},
                                               {"gradient_bytes", bytes},
                                               {"bucket_bytes", cfg_.allreduce_bucket_bytes},
                                               {"secs", SecondsSince(start)}});
  return std::nullopt;
}

std::optional<Failure> CollectiveTrainer::JoinDeviceGroup(Replica& replica) {
  const collective::DeviceCollectiveFactory factory =
      collective::DeviceCollectiveFor(replica.info.device.type);
  // All replicas or none: one on the host (another worker without GPUs) keeps everyone on the
  // CPU groups, which every replica can take part in.
  float on_device = factory != nullptr ? 1.0f : 0.0f;
  absl::Status agreed =
      replica.collective->AllReduce(std::span(&on_device, 1), ReduceOp::kSum).Wait();
  if (!agreed.ok()) {
    return Failure{FailureSource::kPeer, "cannot agree on the device all-reduce group", agreed};
  }
  if (on_device < static_cast<float>(replica.collective->size())) return std::nullopt;
  auto joined = factory(*replica.collective,
                        {.device = replica.info.device, .timeout_secs = cfg_.wait_timeout_secs});
  if (!joined.ok()) {
    return Failure{FailureSource::kPeer, "cannot form the device all-reduce group",
                   joined.status()};
  }
  std::lock_guard lock(device_mu_);
  replica.device_collective = std::move(*joined);
  replica.collective = replica.device_collective.get();
  if (IsChief(replica)) {
    ctx_.logger.Info("device all-reduce group formed", {{"group", replica.collective->Describe()}});
  }
  return std::nullopt;
}

std::optional<Failure> CollectiveTrainer::RunReplica(Replica& replica) {
  if (auto failure = JoinDeviceGroup(replica)) return failure;
  if (auto failure = ShareStartState(replica)) return failure;
  std::vector<std::int64_t> sizes;
  for (const Variable* v : replica.built->state.variables) sizes.push_back(v->value.size());
  sizes.push_back(kControlCount);
  collective::BucketedAllReduce reduce(sizes, cfg_.allreduce_bucket_bytes);
  ProgressWindow window;
  std::int64_t local_step = 0;
  while (replica.session_state.global_step < info_.max_steps) {
    StepRecord record;
    replica.session_state.local_step = local_step;
    if (auto failure = Step(replica, reduce, record)) return failure;
    ++local_step;
    const std::int64_t step = replica.session_state.global_step;
    if (Reports(replica)) {
      SetGlobalStep(step);
      Report(local_step, record, replica.session_state.learning_rate, window);
    }
    if (IsChief(replica)) {
      StepResult result = record.result;
      result.loss = record.control[kLoss];
      schedule_->AfterStep(step, result, record.times.examples);
      absl::Status evaluated = evaluation_->AfterStep(step);
      if (!evaluated.ok()) return Failure{FailureSource::kModel, "evaluate() failed", evaluated};
    }
    if (cfg_.check_variables_steps > 0 && step % cfg_.check_variables_steps == 0) {
      if (auto failure = CheckVariablesAgree(replica)) return failure;
    }
    if (record.control[kStop] > 0.0f) {
      if (Reports(replica)) ctx_.logger.Info("train() asked to stop", {{"global_step", step}});
      return Finish(replica, /*stopped_by_model=*/true);
    }
  }
  return Finish(replica, /*stopped_by_model=*/false);
}

std::optional<Failure> CollectiveTrainer::ShareStartState(Replica& replica) {
  const std::vector<Variable*>& vars = replica.built->state.variables;
  std::int64_t step = 0;
  if (IsChief(replica)) {
    std::error_code ec;
    std::filesystem::create_directories(info_.model_dir, ec);
    std::filesystem::remove(std::filesystem::path(info_.model_dir) / contract::kTrainingDoneFile,
                            ec);
    auto state = LoadTrainingState(ctx_, *replica.built, replica.session, replica.session_state,
                                   optimizer_->slot_count(), /*first_time=*/true, 0);
    if (!state.ok()) {
      return Failure{FailureSource::kData, "cannot load the start state", state.status()};
    }
    for (std::size_t v = 0; v < vars.size(); ++v) {
      std::copy(state->values[v].begin(), state->values[v].end(), vars[v]->value.data());
    }
    replica.slots = std::move(state->slots);
    step = state->global_step;
    schedule_ = std::make_unique<ChiefSchedule>(ctx_, vars, *optimizer_,
                                                [this, &replica](std::int64_t global_step) {
                                                  return SaveCheckpoint(replica, global_step);
                                                });
    schedule_->Start(step, state->from_checkpoint ? step : -1);
    evaluation_ = std::make_unique<ChiefEvaluation>(ctx_, *replica.built->model, replica.session,
                                                    replica.session_state);
    evaluation_->Start(step);
  }
  // Everything in flight at once, then waited for: the step, every variable, every slot.
  std::vector<collective::Handle> handles;
  Collective& group = *replica.collective;
  handles.push_back(group.Broadcast(std::as_writable_bytes(std::span(&step, 1)), 0));
  for (std::size_t v = 0; v < vars.size(); ++v) {
    handles.push_back(group.Broadcast(collective::AsBytes(vars[v]->value.values()), 0));
    for (auto& slot : replica.slots[v]) {
      handles.push_back(group.Broadcast(collective::AsBytes(slot), 0));
    }
  }
  absl::Status shared;
  for (const auto& handle : handles) {
    absl::Status status = handle.Wait();
    if (shared.ok()) shared = status;
  }
  if (!shared.ok()) {
    return Failure{FailureSource::kPeer, "cannot share the start state from the chief", shared};
  }
  replica.session_state.global_step = step;
  if (Reports(replica)) {
    SetGlobalStep(step);
    ctx_.logger.Info(IsChief(replica) ? "start state sent to every replica"
                                      : "start state received from the chief",
                     {{"global_step", step}});
  }
  return std::nullopt;
}

std::optional<Failure> CollectiveTrainer::Step(Replica& replica,
                                               collective::BucketedAllReduce& reduce,
                                               StepRecord& record) {
  Session::State& state = replica.session_state;
  const std::vector<Variable*>& vars = replica.built->state.variables;
  const std::int64_t step = state.global_step;
  state.learning_rate = optimizer_->LearningRate(step);
  const auto start = Clock::now();
  const double cpu_start = ThreadCpuSeconds();
  // On a device: this replica's values go there first, the gradients come back for the host's
  // all-reduce and update.
  VariablePlacement* placement = replica.built->placement.get();
  absl::Status trained = ValuesToDevice(placement);
  if (trained.ok()) {
    trained = CallModel("train()", [&] {
      record.result = replica.built->model->train(replica.session);
      return absl::OkStatus();
    });
  }
  if (trained.ok()) trained = record.result.error;
  if (trained.ok()) trained = GradientsToHost(placement);
  if (!trained.ok()) return Failure{FailureSource::kModel, "train() failed", trained};
  record.times.train_secs = SecondsSince(start);
  record.times.train_cpu_secs = ThreadCpuSeconds() - cpu_start;
  const std::int64_t examples =
      record.result.examples > 0 ? record.result.examples : replica.built->state.batch_size;

  const std::array<float, kControlCount> control = {
      record.result.loss, record.result.stop ? 1.0f : 0.0f, static_cast<float>(examples)};
  std::vector<std::span<const float>> tensors;
  for (const Variable* v : vars) tensors.push_back(v->gradient.values());
  tensors.push_back(control);
  // Each bucket's variables are updated as soon as it arrives, while later buckets travel.
  std::vector<std::span<float>> slots;
  double apply_secs = 0;
  const auto comm_start = Clock::now();
  absl::Status reduced = reduce.Run(
      *replica.collective, tensors, ReduceOp::kMean,
      [&](const collective::BucketPiece& piece, std::span<const float> mean) {
        const auto offset = static_cast<std::size_t>(piece.tensor_offset);
        if (piece.tensor == vars.size()) {
          std::copy(mean.begin(), mean.end(), record.control.begin() + offset);
          return;
        }
        const auto apply_start = Clock::now();
        slots.clear();
        for (auto& slot : replica.slots[piece.tensor]) {
          slots.push_back(std::span<float>(slot).subspan(offset, mean.size()));
        }
        optimizer_->Apply(vars[piece.tensor]->value.values().subspan(offset, mean.size()), mean,
                          slots, step);
        apply_secs += SecondsSince(apply_start);
      });
  if (!reduced.ok()) {
    return Failure{FailureSource::kPeer, "all-reduce of the gradients failed", reduced};
  }
  record.times.comm_secs = SecondsSince(comm_start) - apply_secs;
  record.times.examples = static_cast<std::int64_t>(
      record.control[kExamples] * static_cast<float>(info_.replicas_per_worker) + 0.5f);
  state.global_step = step + 1;
  return std::nullopt;
}

void CollectiveTrainer::Report(std::int64_t local_step, const StepRecord& record,
                               float learning_rate, ProgressWindow& window) {
  window.Add(record.times);
  ctx_.gauges->Set(contract::kLossMetric, record.control[kLoss]);
  ctx_.gauges->Set(contract::kLearningRateMetric, learning_rate);
  if (local_step % cfg_.log_steps != 0) return;
  const ProgressWindow::Summary w = window.Close();
  ctx_.gauges->Set(contract::kExamplesPerSecondMetric, w.examples_per_sec);
  ctx_.logger.Info("training", {{"step", local_step},
                                {"global_step", static_cast<std::int64_t>(ctx_.global_step)},
                                {"loss", static_cast<double>(record.control[kLoss])},
                                {"sec_per_batch", w.sec_per_batch},
                                {"comm_fraction", w.comm_fraction},
                                {"train_secs", w.train_secs},
                                {"train_cpu_secs", w.train_cpu_secs},
                                {"examples_per_sec", w.examples_per_sec}});
}

std::optional<Failure> CollectiveTrainer::CheckVariablesAgree(Replica& replica) {
  std::uint32_t mine = 0;
  for (const Variable* v : replica.built->state.variables) {
    mine = crc32c::Extend(mine, v->value.data(),
                          static_cast<std::size_t>(v->value.size()) * sizeof(float));
  }
  std::uint32_t chiefs = mine;
  Collective& group = *replica.collective;
  absl::Status status = group.Broadcast(std::as_writable_bytes(std::span(&chiefs, 1)), 0).Wait();
  float differing = chiefs == mine ? 0.0f : 1.0f;
  if (status.ok()) status = group.AllReduce(std::span(&differing, 1), ReduceOp::kSum).Wait();
  if (!status.ok()) {
    return Failure{FailureSource::kPeer, "cannot compare the variables across replicas", status};
  }
  if (differing == 0.0f) return std::nullopt;
  return Failure{
      FailureSource::kModel, "replicas hold different variables",
      absl::InternalError(
          "at global step " + std::to_string(replica.session_state.global_step) + ", " +
          std::to_string(static_cast<int>(differing)) + " of " +
          std::to_string(info_.num_replicas_in_sync()) +
          " replicas hold variables whose checksum differs from the chief's, so they no longer "
          "train one model (an update that is not deterministic, or memory corrupted); checked "
          "every TAAS_CHECK_VARIABLES_STEPS=" +
          std::to_string(cfg_.check_variables_steps) + " steps")};
}

std::optional<Failure> CollectiveTrainer::Finish(Replica& replica, bool stopped_by_model) {
  const std::int64_t step = replica.session_state.global_step;
  if (Reports(replica)) {
    ctx_.logger.Info("training finished", {{"global_step", step},
                                           {"max_steps", info_.max_steps},
                                           {"stopped_by_model", stopped_by_model}});
  }
  if (IsChief(replica)) {
    if (step != schedule_->last_checkpoint_step()) {
      absl::Status saved = SaveCheckpoint(replica, step);
      if (!saved.ok()) return Failure{FailureSource::kData, "final checkpoint failed", saved};
    }
    MarkTrainingDone(info_, step);
    absl::Status evaluated = evaluation_->AtEnd(step);
    if (!evaluated.ok()) return Failure{FailureSource::kModel, "evaluate() failed", evaluated};
  }
  if (!Reports(replica)) return std::nullopt;
  absl::Status after = ValuesToDevice(replica.built->placement.get());
  if (after.ok())
    after = CallModel("after_train()", [&] {
      replica.built->model->after_train(replica.session, info_.is_chief);
      return absl::OkStatus();
    });
  if (!after.ok()) return Failure{FailureSource::kModel, "after_train() failed", after};
  if (info_.is_chief) ctx_.logger.Info("job done", {{"global_step", step}});
  return std::nullopt;
}

absl::Status CollectiveTrainer::SaveCheckpoint(Replica& replica, std::int64_t global_step) {
  TrainingState state;
  state.global_step = global_step;
  for (const Variable* v : replica.built->state.variables) {
    auto values = v->value.values();
    state.values.emplace_back(values.begin(), values.end());
  }
  state.slots = replica.slots;
  const auto start = Clock::now();
  TAAS_ASSIGN_OR_RETURN(
      std::string path,
      checkpoint::Save(info_.model_dir, global_step,
                       CheckpointEntries(replica.built->state.variables, std::move(state)),
                       cfg_.keep_checkpoints));
  ctx_.logger.Info(
      "saved checkpoint",
      {{"checkpoint", path}, {"global_step", global_step}, {"secs", SecondsSince(start)}});
  schedule_->CheckpointIsAt(global_step);
  return absl::OkStatus();
}

void CollectiveTrainer::SetGlobalStep(std::int64_t global_step) {
  ctx_.global_step = global_step;
  ctx_.gauges->Set(contract::kGlobalStepMetric, static_cast<double>(global_step));
  for (auto& replica : replicas_) replica->built->global_step = global_step;
}

}  // namespace

int RunCollectiveTrainer(Context& ctx) {
  CollectiveTrainer trainer(ctx);
  return trainer.Run();
}

}  // namespace taas::runtime
