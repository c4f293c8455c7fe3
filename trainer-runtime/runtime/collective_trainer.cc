// The training replicas under all-reduce (Strategy::kCollective, TensorFlow's
// MultiWorkerMirroredStrategy): every worker holds every variable and its optimizer slots, each
// model replica in fused buffers on its own device (replica_state.h). The chief starts training
// (restore, warm start or initialisers) and broadcasts the state; then each step every model
// replica runs train(), and as its backward pass finishes the variables' gradients, their buckets
// are all-reduced (mean over every replica of the job) in place, in the device's memory; then
// each replica applies the same update to its own copy with its device's update rules. The
// gradients travel over the devices' own group (NCCL for GPUs) when every replica of the job has
// one, else over the CPU groups (in process across a worker's replicas, the TCP ring across
// workers), staged through the host for a replica on a device. The step's loss is reduced with
// the gradients and stays on the device until the runtime logs it (every log_steps): nothing else
// of a step is copied to the host. The chief's first replica writes checkpoints and summaries
// from host copies of its state; every few steps the replicas compare a checksum of their
// variables. State that is not trained (ModelBuilder::AddState) is broadcast from the chief's first
// replica with the start state, on the devices; then each replica's evolves with its own steps,
// and the chief's is what its checkpoints hold (docs/trainer-runtime.md).
#include <algorithm>
#include <array>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "chief.h"
#include "exit_code.h"
#include "internal.h"
#include "progress.h"
#include "taas/collective/buckets.h"
#include "taas/collective/device_collective.h"
#include "taas/collective/in_process.h"
#include "taas/collective/staged.h"
#include "taas/collective/tcp_ring.h"
#include "taas/contract/env.h"
#include "taas/contract/metric_names.h"
#include "taas/crc32c/crc32c.h"
#include "termination.h"

namespace taas::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using collective::BucketedAllReduce;
using collective::BucketPiece;
using collective::Collective;
using collective::ReduceOp;

// What ends a replica's training early: logged once, by the worker, with its exit code.
struct Failure {
  FailureSource source;
  std::string cause;
  absl::Status status;
};

// The host values all-reduced (mean) over the CPU group every step, beside the gradients: whether
// any replica's train() asked to stop (> 0), the mean examples per replica, and whether any
// replica got SIGTERM or SIGINT (> 0): every replica then ends after the same step, the chief
// saving it, instead of the others waiting in the ring for one that left.
enum Control { kStop, kExamples, kTerminate, kControlCount };

// Tells a replica's all-reduce which gradients are final, as the engine's backward pass reports
// them (MarkGradientReady): bucket tensor p of the all-reduce is the replica's fused layout's
// p-th part, the variable registered at n - 1 - p (replica_state.h lays them out in reverse).
class GradientNotices final : public GradientListener {
 public:
  void Watch(const std::vector<Variable*>& variables, BucketedAllReduce& reduce) {
    reduce_ = &reduce;
    for (std::size_t i = 0; i < variables.size(); ++i) {
      variables[i]->listener = this;
      part_of_[variables[i]] = variables.size() - 1 - i;
    }
  }
  void Unwatch(const std::vector<Variable*>& variables) {
    for (Variable* variable : variables) variable->listener = nullptr;
  }
  void GradientReady(const Variable& variable) override {
    if (auto it = part_of_.find(&variable); it != part_of_.end()) reduce_->TensorReady(it->second);
  }

 private:
  BucketedAllReduce* reduce_ = nullptr;
  std::unordered_map<const Variable*, std::size_t> part_of_;
};

// One model replica of this worker, driven by its own thread.
struct Replica {
  TrainerInfo info;
  std::unique_ptr<BuiltModel> built;
  Session::State session_state;
  Session session{&session_state};
  // The optimizer's slots: one buffer per slot on the replica's device, laid out as its values.
  std::vector<Tensor> slots;
  // The CPU group (an in-process member, or the ring): the step's host values, start-up.
  Collective* cpu = nullptr;
  // What carries the device's buffers: the devices' own group, or the CPU group staged through
  // the host. Set under CollectiveTrainer::device_mu_ (aborted from another thread).
  std::unique_ptr<collective::DeviceCollective> device_group;
  // The device group, or the CPU group for a replica on the host.
  Collective* buffers = nullptr;
  std::unique_ptr<BucketedAllReduce> reduce;
  GradientNotices notices;

  ReplicaState& state() { return *built->replica; }
  const std::vector<Variable*>& host_variables() const { return built->state.variables; }
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
  // Chooses what carries the replica's buffers: its device's group when every replica of the job
  // has one, else the CPU group (staged through the host for a replica on a device). Each
  // replica's thread joins at the same time.
  std::optional<Failure> JoinDeviceGroup(Replica& replica);
  // A replica's whole life once the group formed: start state, steps, finish.
  std::optional<Failure> RunReplica(Replica& replica);
  // The chief's first replica loads the start state; every replica receives it.
  std::optional<Failure> ShareStartState(Replica& replica);
  // train() -> all-reduce the gradients (from within train(), as they become final) -> apply
  // the update to this replica's copy, on its device.
  std::optional<Failure> Step(Replica& replica, StepRecord& record);
  // The optimizer on elements [begin, begin + count) of variable `v` (registration order).
  absl::Status Apply(Replica& replica, std::size_t v, std::int64_t begin, std::int64_t count,
                     std::int64_t step);
  // Adds the step to `window` and `run`, and logs the window every log_steps local steps.
  void Report(Replica& replica, std::int64_t local_step, const StepRecord& record,
              ProgressWindow& window, RunSummary& run);
  // The "training" line of `window`, closing it.
  void LogWindow(Replica& replica, std::int64_t local_step, ProgressWindow& window);
  std::optional<Failure> CheckVariablesAgree(Replica& replica);
  // `local_step`, `window` and `run`: the replica's, for its last window and its run summary.
  std::optional<Failure> Finish(Replica& replica, bool stopped_by_model, std::int64_t local_step,
                                ProgressWindow& window, const RunSummary& run);
  absl::Status SaveCheckpoint(Replica& replica, std::int64_t global_step);
  // After the step at which some replica had a termination signal (kTerminate): the chief saves
  // its replica's state within the grace; the worker's first replica ends the worker with the
  // transient code (kTerminated), the others end quietly.
  std::optional<Failure> Terminate(Replica& replica, std::int64_t global_step);

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
  std::mutex device_mu_;  // guards each replica's device_group (set on its thread, aborted from
                          // the failing one's)
};

// The replica's loss, reduced with its gradients (or its own, in a group of one), on the host:
// the one copy from the device a step may cost, made only when the runtime logs or summarises.
absl::StatusOr<float> ReadLoss(ReplicaState& state) {
  Tensor host({1});
  TAAS_RETURN_IF_ERROR(CopyInto(state.gradients().Slice(state.loss_offset(), {1}), host));
  return host.data()[0];
}

// Puts the step's loss beside the gradients, where the all-reduce averages it: from the device
// when the model left it there, else from `loss` (a copy to the device, never from it).
absl::Status PutLoss(ReplicaState& state, const StepResult& result) {
  Tensor slot = state.gradients().Slice(state.loss_offset(), {1});
  if (!result.device_loss) return CopyInto(Tensor({1}, std::vector<float>{result.loss}), slot);
  if (result.device_loss->size() != 1) {
    return absl::InvalidArgumentError("StepResult::device_loss must hold one element, got " +
                                      ShapeString(result.device_loss->shape()));
  }
  return CopyInto(*result.device_loss, slot);
}

int CollectiveTrainer::Run() {
  std::optional<Failure> failure = BuildReplicas();
  if (!failure && TrainingAlreadyDone(info_, ctx_.logger)) return kExitOk;
  if (!failure) failure = FormGroup();
  if (failure) {
    // Terminated while the ring formed: nothing was trained, so there is nothing to save.
    if (auto deadline = TerminationRequested(ctx_)) {
      return ExitTerminated(ctx_, *deadline, ctx_.global_step,
                            "nothing to save yet: it was still forming the all-reduce ring");
    }
  }
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
            if (r->device_group) r->device_group->Abort(failure->status);
          }
        }
      }
      replica.notices.Unwatch(replica.state().model_variables());
      // A device group is destroyed on its replica's thread, as the others are on theirs: NCCL's
      // destroy waits for the other ranks of the node.
      std::unique_ptr<collective::DeviceCollective> device;
      std::lock_guard device_lock(device_mu_);
      device = std::move(replica.device_group);
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
    replica->session_state.states = &replica->built->state.states;
    replica->session_state.replica = replica->built->replica.get();
    replicas_.push_back(std::move(replica));
  }
  // Every replica must hold the same variables, or the buckets would mix them.
  const auto& first = replicas_[0]->host_variables();
  for (const auto& replica : replicas_) {
    const auto& vars = replica->host_variables();
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
  // The same for the state, which the start broadcast sends tensor by tensor.
  const auto& first_states = replicas_[0]->built->state.states;
  for (const auto& replica : replicas_) {
    const auto& states = replica->built->state.states;
    for (std::size_t s = 0; s < std::max(states.size(), first_states.size()); ++s) {
      if (s >= states.size() || s >= first_states.size() ||
          states[s]->name != first_states[s]->name ||
          states[s]->value.size() != first_states[s]->value.size()) {
        return Failure{FailureSource::kModel, "build_model failed",
                       absl::InvalidArgumentError(
                           "replica " + std::to_string(replica->info.replica_in_worker) +
                           " registered other state than replica 0 (state " + std::to_string(s) +
                           "): build_model must register the same state in every replica")};
      }
    }
  }
  // BuildModel validated the optimizer settings: creating it cannot fail here.
  optimizer_ = std::move(optim::CreateOptimizer(replicas_[0]->built->state.optimizer)).value();
  for (auto& replica : replicas_) {
    ReplicaState& state = replica->state();
    try {
      for (int k = 0; k < optimizer_->slot_count(); ++k) {
        replica->slots.emplace_back(Shape{state.elements()}, state.device());
      }
    } catch (const std::bad_alloc&) {
      return Failure{FailureSource::kModel, "build_model failed",
                     absl::ResourceExhaustedError("the optimizer's slots do not fit on " +
                                                  DeviceName(state.device()))};
    }
    // The buckets' tensors: the fused layout's parts in order (padding included), then the loss.
    std::vector<std::int64_t> sizes;
    for (std::size_t v = state.parts().size(); v-- > 0;) sizes.push_back(state.parts()[v].padded);
    sizes.push_back(1);
    replica->reduce = std::make_unique<BucketedAllReduce>(sizes, cfg_.allreduce_bucket_bytes);
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
    options.incarnation = cfg_.replica_incarnation;
    options.timeout_secs = cfg_.wait_timeout_secs;
    options.chunk_bytes = cfg_.allreduce_chunk_bytes;
    options.stalls = ctx_.stalls;
    options.peer_names = cfg_.worker_names;
    options.stopped = [this] { return TerminationRequested(ctx_).has_value(); };
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
      replicas_[static_cast<std::size_t>(r)]->cpu = &group_->member(r);
    }
  } else {
    replicas_[0]->cpu = ring_.get();
  }
  std::string devices;
  for (const auto& replica : replicas_) {
    devices += (devices.empty() ? "" : ",") + DeviceName(replica->info.device);
  }
  std::int64_t bytes = 0;
  for (const Variable* v : replicas_[0]->host_variables()) {
    bytes += static_cast<std::int64_t>(sizeof(float)) * v->value.size();
  }
  ctx_.logger.Info("all-reduce group formed",
                   {{"group", replicas_[0]->cpu->Describe()},
                    {"replicas_in_sync", info_.num_replicas_in_sync()},
                    {"replicas_per_worker", info_.replicas_per_worker},
                    {"devices", devices},
                    {"gradient_bytes", bytes},
                    {"buckets", static_cast<std::int64_t>(replicas_[0]->reduce->buckets().size())},
                    {"bucket_bytes", cfg_.allreduce_bucket_bytes},
                    {"secs", SecondsSince(start)}});
  return std::nullopt;
}

std::optional<Failure> CollectiveTrainer::JoinDeviceGroup(Replica& replica) {
  const Device device = replica.info.device;
  const collective::DeviceCollectiveFactory factory = collective::DeviceCollectiveFor(device.type);
  // All replicas or none: one on the host (another worker without GPUs) keeps everyone on the
  // CPU groups, which every replica can take part in.
  float on_device = factory != nullptr ? 1.0f : 0.0f;
  if (replica.cpu->size() > 1) {
    absl::Status agreed = replica.cpu->AllReduce(std::span(&on_device, 1), ReduceOp::kSum).Wait();
    if (!agreed.ok()) {
      return Failure{FailureSource::kPeer, "cannot agree on the device all-reduce group", agreed};
    }
  }
  std::unique_ptr<collective::DeviceCollective> group;
  if (device.is_cpu()) {
    replica.buffers = replica.cpu;
    return std::nullopt;
  }
  if (on_device < static_cast<float>(replica.cpu->size()) || replica.cpu->size() == 1) {
    // A group of one reduces nothing; a mixed job's device replicas copy through the host.
    group = collective::StageThroughHost(*replica.cpu, device);
  } else {
    auto joined = factory(*replica.cpu, {.device = device, .timeout_secs = cfg_.wait_timeout_secs});
    if (!joined.ok()) {
      return Failure{FailureSource::kPeer, "cannot form the device all-reduce group",
                     joined.status()};
    }
    group = std::move(*joined);
  }
  std::lock_guard lock(device_mu_);
  replica.device_group = std::move(group);
  replica.buffers = replica.device_group.get();
  if (IsChief(replica)) {
    ctx_.logger.Info("device all-reduce group formed", {{"group", replica.buffers->Describe()}});
  }
  return std::nullopt;
}

std::optional<Failure> CollectiveTrainer::RunReplica(Replica& replica) {
  if (auto failure = JoinDeviceGroup(replica)) return failure;
  if (auto failure = ShareStartState(replica)) return failure;
  replica.notices.Watch(replica.state().model_variables(), *replica.reduce);
  ProgressWindow window;
  RunSummary run;
  std::int64_t local_step = 0;
  while (replica.session_state.global_step < info_.max_steps) {
    StepRecord record;
    replica.session_state.local_step = local_step;
    if (auto failure = Step(replica, record)) return failure;
    ++local_step;
    const std::int64_t step = replica.session_state.global_step;
    if (Reports(replica)) {
      SetGlobalStep(step);
      Report(replica, local_step, record, window, run);
    }
    if (IsChief(replica)) {
      schedule_->AfterStep(
          step, record.times.examples, [&] { return ReadLoss(replica.state()); }, record.result);
      absl::Status evaluated = evaluation_->AfterStep(step);
      if (!evaluated.ok()) return Failure{FailureSource::kModel, "evaluate() failed", evaluated};
    }
    if (cfg_.check_variables_steps > 0 && step % cfg_.check_variables_steps == 0) {
      if (auto failure = CheckVariablesAgree(replica)) return failure;
    }
    if (record.control[kTerminate] > 0.0f) return Terminate(replica, step);
    if (record.control[kStop] > 0.0f) {
      if (Reports(replica)) ctx_.logger.Info("train() asked to stop", {{"global_step", step}});
      return Finish(replica, /*stopped_by_model=*/true, local_step, window, run);
    }
  }
  return Finish(replica, /*stopped_by_model=*/false, local_step, window, run);
}

std::optional<Failure> CollectiveTrainer::ShareStartState(Replica& replica) {
  ReplicaState& state = replica.state();
  const std::vector<Variable*>& vars = replica.host_variables();
  std::int64_t step = 0;
  if (IsChief(replica)) {
    std::error_code ec;
    std::filesystem::create_directories(info_.model_dir, ec);
    std::filesystem::remove(std::filesystem::path(info_.model_dir) / contract::kTrainingDoneFile,
                            ec);
    auto start = LoadTrainingState(ctx_, *replica.built, replica.session, replica.session_state,
                                   optimizer_->slot_count(), /*first_time=*/true, 0);
    if (!start.ok()) {
      return Failure{FailureSource::kData, "cannot load the start state", start.status()};
    }
    for (std::size_t v = 0; v < vars.size(); ++v) {
      std::copy(start->values[v].begin(), start->values[v].end(), vars[v]->value.values().begin());
    }
    state.ValuesChangedOnHost();
    absl::Status placed = state.ValuesToDevice();
    if (placed.ok()) placed = state.StateToDevice();
    for (std::size_t k = 0; k < replica.slots.size() && placed.ok(); ++k) {
      Tensor host({state.elements()});
      for (std::size_t v = 0; v < vars.size(); ++v) {
        const auto& values = start->slots[v][k];
        std::copy(values.begin(), values.end(), host.values().begin() + state.parts()[v].offset);
      }
      placed = CopyInto(host, replica.slots[k]);
    }
    if (!placed.ok()) {
      return Failure{FailureSource::kData, "cannot place the start state", placed};
    }
    step = start->global_step;
    schedule_ = std::make_unique<ChiefSchedule>(ctx_, vars, state, *optimizer_,
                                                [this, &replica](std::int64_t global_step) {
                                                  return SaveCheckpoint(replica, global_step);
                                                });
    schedule_->Start(step, start->from_checkpoint ? step : -1);
    evaluation_ = std::make_unique<ChiefEvaluation>(ctx_, *replica.built->model, replica.session,
                                                    replica.session_state);
    evaluation_->Start(step);
  }
  if (replica.cpu->size() > 1) {
    // Everything in flight at once, then waited for: the step (a host value), the values, every
    // slot and the model's state tensors (device buffers).
    std::vector<collective::Handle> handles;
    handles.push_back(replica.cpu->Broadcast(std::as_writable_bytes(std::span(&step, 1)), 0));
    const auto elements = static_cast<std::size_t>(state.elements());
    handles.push_back(
        replica.buffers->Broadcast(collective::AsBytes({state.values().data(), elements}), 0));
    for (Tensor& slot : replica.slots) {
      handles.push_back(
          replica.buffers->Broadcast(collective::AsBytes({slot.data(), elements}), 0));
    }
    for (Variable* model_state : state.model_states()) {
      Tensor& value = model_state->value;
      handles.push_back(replica.buffers->Broadcast(
          collective::AsBytes({value.data(), static_cast<std::size_t>(value.size())}), 0));
    }
    absl::Status shared;
    for (const auto& handle : handles) {
      absl::Status status = handle.Wait();
      if (shared.ok()) shared = status;
    }
    if (!shared.ok()) {
      return Failure{FailureSource::kPeer, "cannot share the start state from the chief", shared};
    }
    if (!IsChief(replica)) {
      state.ValuesChangedOnDevice();
      state.StateChangedOnDevice();
    }
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

std::optional<Failure> CollectiveTrainer::Step(Replica& replica, StepRecord& record) {
  Session::State& session = replica.session_state;
  ReplicaState& state = replica.state();
  const std::int64_t step = session.global_step;
  session.learning_rate = optimizer_->LearningRate(step);
  const bool reduces = replica.cpu->size() > 1;
  const auto start = Clock::now();
  const double cpu_start = ThreadCpuSeconds();
  absl::Status trained = absl::OkStatus();
  if (reduces) {
    trained = replica.reduce->Begin(
        *replica.buffers,
        {state.gradients().data(), static_cast<std::size_t>(state.loss_offset() + 1)},
        ReduceOp::kMean);
  }
  if (trained.ok()) trained = TrainOnce(*replica.built, replica.session, record.result);
  if (trained.ok()) trained = PutLoss(state, record.result);
  if (!trained.ok()) {
    // Buckets issued from within train() are awaited before the buffer may be reused.
    if (reduces) (void)replica.reduce->Finish([](const BucketPiece&) { return absl::OkStatus(); });
    return Failure{FailureSource::kModel, "train() failed", trained};
  }
  record.times.train_secs = SecondsSince(start);
  record.times.train_cpu_secs = ThreadCpuSeconds() - cpu_start;
  const std::int64_t examples =
      record.result.examples > 0 ? record.result.examples : replica.built->state.batch_size;
  record.control = {record.result.stop ? 1.0f : 0.0f, static_cast<float>(examples),
                    TerminationRequested(ctx_) ? 1.0f : 0.0f};
  const auto comm_start = Clock::now();
  // The host values travel over the CPU group while the last buckets do.
  collective::Handle control =
      reduces ? replica.cpu->AllReduce(record.control, ReduceOp::kMean) : collective::Handle();
  const std::size_t variables = state.parts().size();
  double apply_secs = 0;
  const auto apply = [&](const BucketPiece& piece) -> absl::Status {
    if (piece.tensor >= variables) return absl::OkStatus();  // the loss
    const std::size_t v = variables - 1 - piece.tensor;
    const std::int64_t end = std::min(piece.tensor_offset + piece.size, state.parts()[v].size);
    if (end <= piece.tensor_offset) return absl::OkStatus();  // the part's padding
    const auto apply_start = Clock::now();
    absl::Status applied = Apply(replica, v, piece.tensor_offset, end - piece.tensor_offset, step);
    apply_secs += SecondsSince(apply_start);
    return applied;
  };
  // Clipping by global norm needs every averaged gradient before any update: the buckets are
  // only awaited, then the whole buffer is clipped on the device and every variable updated.
  // Without it, each bucket's variables are updated as soon as it is reduced.
  const bool clips = optimizer_->clips();
  absl::Status reduced = absl::OkStatus();
  if (reduces) {
    reduced = clips ? replica.reduce->Finish([](const BucketPiece&) { return absl::OkStatus(); })
                    : replica.reduce->Finish(apply);
  }
  if (reduced.ok() && clips) {
    Tensor gradients = state.variable_gradients();
    reduced = optimizer_->ClipByGlobalNorm(std::span<Tensor* const>(std::array{&gradients}));
  }
  if (!reduces || clips) {
    for (std::size_t v = 0; v < variables && reduced.ok(); ++v) {
      const auto apply_start = Clock::now();
      reduced = Apply(replica, v, 0, state.parts()[v].size, step);
      apply_secs += SecondsSince(apply_start);
    }
  }
  absl::Status controlled = control.Wait();
  if (reduced.ok()) reduced = controlled;
  if (!reduced.ok()) {
    const bool model = reduced.code() == absl::StatusCode::kInvalidArgument;
    return Failure{model ? FailureSource::kModel : FailureSource::kPeer,
                   model ? "the update failed" : "all-reduce of the gradients failed", reduced};
  }
  state.ValuesChangedOnDevice();
  record.times.comm_secs = SecondsSince(comm_start) - apply_secs;
  record.times.examples = static_cast<std::int64_t>(
      record.control[kExamples] * static_cast<float>(info_.replicas_per_worker) + 0.5f);
  session.global_step = step + 1;
  return std::nullopt;
}

absl::Status CollectiveTrainer::Apply(Replica& replica, std::size_t v, std::int64_t begin,
                                      std::int64_t count, std::int64_t step) {
  ReplicaState& state = replica.state();
  const std::int64_t offset = state.parts()[v].offset + begin;
  Tensor var = state.values().Slice(offset, {count});
  const Tensor grad = state.gradients().Slice(offset, {count});
  std::array<Tensor, optim::kMaxSlots> slots;
  std::array<Tensor*, optim::kMaxSlots> slot_pointers{};
  for (std::size_t k = 0; k < replica.slots.size(); ++k) {
    slots[k] = replica.slots[k].Slice(offset, {count});
    slot_pointers[k] = &slots[k];
  }
  return optimizer_->ApplyTensors(state.model_variables()[v]->name, var, grad,
                                  std::span(slot_pointers.data(), replica.slots.size()), step);
}

void CollectiveTrainer::Report(Replica& replica, std::int64_t local_step, const StepRecord& record,
                               ProgressWindow& window, RunSummary& run) {
  window.Add(record.times);
  run.Add(record.times.examples);
  ctx_.gauges->Set(contract::kLearningRateMetric, replica.session_state.learning_rate);
  if (local_step % cfg_.log_steps == 0) LogWindow(replica, local_step, window);
}

void CollectiveTrainer::LogWindow(Replica& replica, std::int64_t local_step,
                                  ProgressWindow& window) {
  const ProgressWindow::Summary w = window.Close();
  ctx_.gauges->Set(contract::kExamplesPerSecondMetric, w.examples_per_sec);
  absl::StatusOr<float> loss = ReadLoss(replica.state());
  if (!loss.ok()) {
    ctx_.logger.Warning("cannot read the loss", {{"error", loss.status().ToString()}});
    return;
  }
  ctx_.gauges->Set(contract::kLossMetric, *loss);
  ctx_.logger.Info("training", {{"step", local_step},
                                {"global_step", static_cast<std::int64_t>(ctx_.global_step)},
                                {"loss", static_cast<double>(*loss)},
                                {"sec_per_batch", w.sec_per_batch},
                                {"comm_fraction", w.comm_fraction},
                                {"train_secs", w.train_secs},
                                {"train_cpu_secs", w.train_cpu_secs},
                                {"buckets_during_train", replica.reduce->issued_early()},
                                {"examples_per_sec", w.examples_per_sec}});
}

std::optional<Failure> CollectiveTrainer::CheckVariablesAgree(Replica& replica) {
  if (absl::Status copied = replica.state().ValuesToHost(); !copied.ok()) {
    return Failure{FailureSource::kModel, "cannot read the variables", copied};
  }
  std::uint32_t mine = 0;
  for (const Variable* v : replica.host_variables()) {
    mine = crc32c::Extend(mine, v->value.values().data(),
                          static_cast<std::size_t>(v->value.size()) * sizeof(float));
  }
  std::uint32_t chiefs = mine;
  Collective& group = *replica.cpu;
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
          "every " +
          std::string(contract::kCheckVariablesStepsEnv) + "=" +
          std::to_string(cfg_.check_variables_steps) + " steps")};
}

std::optional<Failure> CollectiveTrainer::Finish(Replica& replica, bool stopped_by_model,
                                                 std::int64_t local_step, ProgressWindow& window,
                                                 const RunSummary& run) {
  const std::int64_t step = replica.session_state.global_step;
  if (Reports(replica)) {
    // The last window, shorter than TAAS_LOG_STEPS, is logged too.
    if (window.steps() > 0) LogWindow(replica, local_step, window);
    const RunSummary::Figures figures = run.Get();
    ctx_.logger.Info("training finished", {{"global_step", step},
                                           {"max_steps", info_.max_steps},
                                           {"stopped_by_model", stopped_by_model},
                                           {"local_steps", figures.local_steps},
                                           {"warmup_steps", figures.warmup_steps},
                                           {"mean_sec_per_batch", figures.sec_per_batch},
                                           {"mean_examples_per_sec", figures.examples_per_sec}});
  }
  if (IsChief(replica)) {
    if (step != schedule_->last_checkpoint_step()) {
      absl::Status saved = SaveCheckpoint(replica, step);
      if (!saved.ok()) return Failure{FailureSource::kData, "final checkpoint failed", saved};
    }
    // Done only once the final evaluation succeeded (as the PS trainer's Finish).
    absl::Status evaluated = evaluation_->AtEnd(step);
    if (!evaluated.ok()) return Failure{FailureSource::kModel, "evaluate() failed", evaluated};
    MarkTrainingDone(info_, step);
  }
  if (!Reports(replica)) return std::nullopt;
  absl::Status after = replica.state().Synchronize();
  if (after.ok())
    after = CallModel("after_train()", [&] {
      replica.built->model->after_train(replica.session, info_.is_chief);
      return absl::OkStatus();
    });
  if (!after.ok()) return Failure{FailureSource::kModel, "after_train() failed", after};
  if (IsChief(replica)) {
    PublishFinalMetrics(ctx_, *schedule_, step, replica.session_state.final_metrics);
    ctx_.logger.Info("job done", {{"global_step", step}});
  }
  return std::nullopt;
}

std::optional<Failure> CollectiveTrainer::Terminate(Replica& replica, std::int64_t global_step) {
  if (!Reports(replica)) return std::nullopt;
  // This process's own signal, or (told by another replica) the grace counted from now.
  const std::optional<TerminationDeadline> own = TerminationRequested(ctx_);
  const TerminationDeadline deadline = own.value_or(TerminationDeadline(
      {0, Clock::now()}, std::chrono::duration<double>(cfg_.termination_grace_secs)));
  const std::string signal = own ? std::string(TerminationSignalName(own->request().signal))
                                 : std::string("another replica's signal");
  ctx_.logger.Info("terminating: the step in flight is done",
                   {{"signal", signal},
                    {"global_step", global_step},
                    {"deadline_secs", deadline.SecondsLeft(Clock::now())}});
  std::string what = "the step in flight finished";
  if (IsChief(replica) && !NeedsTerminationSave(global_step, schedule_->last_checkpoint_step())) {
    what = "the last checkpoint holds the job's step " + std::to_string(global_step);
  } else if (IsChief(replica)) {
    // The state is this process's own: the save takes the device's copy and the disk's write.
    const auto start = Clock::now();
    const absl::Status saved = SaveCheckpoint(replica, global_step);
    if (saved.ok()) {
      ctx_.logger.Info("checkpoint on termination saved",
                       {{"global_step", global_step},
                        {"save_secs", SecondsSince(start)},
                        {"since_signal_secs", deadline.SecondsSinceSignal(Clock::now())},
                        {"in_time", !deadline.Passed(Clock::now())}});
      what = "the job's state is saved at global step " + std::to_string(global_step);
    } else {
      // Written atomically (checkpoint.h): the previous checkpoint stays the latest, and the
      // job comes back from it.
      ctx_.logger.Warning(
          "checkpoint on termination abandoned: the previous checkpoint stays the latest",
          {{"error", std::string(saved.message())},
           {"last_checkpoint_step", schedule_->last_checkpoint_step()},
           {"save_secs", SecondsSince(start)}});
      what = "the checkpoint on termination was abandoned";
    }
  }
  return Failure{FailureSource::kTerminated, "terminated by " + signal,
                 absl::CancelledError(
                     DescribeTermination(what, signal, deadline.SecondsSinceSignal(Clock::now())))};
}

absl::Status CollectiveTrainer::SaveCheckpoint(Replica& replica, std::int64_t global_step) {
  ReplicaState& state = replica.state();
  TAAS_RETURN_IF_ERROR(state.ValuesToHost());
  TAAS_RETURN_IF_ERROR(state.StateToHost());
  TrainingState training;
  training.global_step = global_step;
  for (const Variable* v : replica.host_variables()) {
    auto values = v->value.values();
    training.values.emplace_back(values.begin(), values.end());
  }
  training.slots.resize(training.values.size());
  for (const Tensor& slot : replica.slots) {
    Tensor host({state.elements()});
    TAAS_RETURN_IF_ERROR(CopyInto(slot, host));
    for (std::size_t v = 0; v < training.values.size(); ++v) {
      const auto begin = host.values().begin() + state.parts()[v].offset;
      training.slots[v].emplace_back(begin, begin + state.parts()[v].size);
    }
  }
  const auto start = Clock::now();
  TAAS_ASSIGN_OR_RETURN(
      std::string path,
      checkpoint::Save(info_.model_dir, global_step,
                       CheckpointEntries(replica.host_variables(), replica.built->state.states,
                                         std::move(training)),
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
