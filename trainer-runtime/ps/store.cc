#include "taas/ps/store.h"

#include <algorithm>

namespace taas::ps {

ParameterStore::ParameterStore(std::uint64_t incarnation) : incarnation_(incarnation) {}

absl::Status ParameterStore::NotInitialized() const {
  return absl::FailedPreconditionError(
      "parameter server (incarnation " + std::to_string(incarnation_) +
      ") holds no variables yet: waiting for the chief to initialise or restore them");
}

absl::Status ParameterStore::Initialize(const TrainingSpec& spec, std::vector<ShardState> shards,
                                        std::int64_t step) {
  if (spec.sync && spec.replicas_to_aggregate < 1) {
    return absl::InvalidArgumentError("replicas_to_aggregate must be >= 1");
  }
  TAAS_ASSIGN_OR_RETURN(auto optimizer, nn::CreateOptimizer(spec.optimizer));
  const std::size_t slot_count = static_cast<std::size_t>(optimizer->slot_count());
  std::map<std::string, Shard> fresh;
  for (auto& s : shards) {
    Shard shard;
    shard.slots = std::move(s.slots);
    if (shard.slots.size() != slot_count) shard.slots.assign(slot_count, {});
    for (auto& slot : shard.slots) {
      if (slot.size() != s.values.size()) slot.assign(s.values.size(), 0.0f);
    }
    shard.values = std::move(s.values);
    if (!fresh.emplace(s.name, std::move(shard)).second) {
      return absl::InvalidArgumentError("shard " + s.name + " given twice");
    }
  }
  std::vector<Done> released;
  {
    std::lock_guard<std::mutex> lock(mu_);
    spec_ = spec;
    optimizer_ = std::move(optimizer);
    shards_ = std::move(fresh);
    step_ = step;
    initialized_ = true;
    done_ = false;
    touched_.clear();
    contributors_.clear();
    released.swap(waiting_);
  }
  for (auto& d : released) d(PushResult{PushOutcome::kReset, step});
  return absl::OkStatus();
}

ParameterStore::Status ParameterStore::GetStatus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {incarnation_, initialized_, done_, step_, static_cast<std::int64_t>(waiting_.size())};
}

absl::StatusOr<std::int64_t> ParameterStore::Pull(
    const std::vector<std::string>& names,
    const std::function<void(const std::string&, std::span<const float>)>& read) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) return NotInitialized();
  for (const auto& name : names) {
    auto it = shards_.find(name);
    if (it == shards_.end()) {
      return absl::NotFoundError("no variable shard " + name +
                                 " on this parameter server: the model differs from the chief's");
    }
    read(name, it->second.values);
  }
  return step_;
}

void ParameterStore::ApplyLocked(Shard& shard, std::span<const float> gradient) {
  std::vector<std::span<float>> slots;
  slots.reserve(shard.slots.size());
  for (auto& s : shard.slots) slots.emplace_back(s);
  optimizer_->Apply(shard.values, gradient, slots, step_);
}

void ParameterStore::Push(std::int64_t step, const std::vector<Gradient>& gradients, Done done,
                          int worker) {
  std::vector<Done> released;
  absl::StatusOr<PushResult> result = PushResult{};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!initialized_) {
      result = NotInitialized();
    } else if (done_ || (spec_.max_steps > 0 && step_ >= spec_.max_steps)) {
      result = PushResult{PushOutcome::kDone, step_};
    } else {
      for (const auto& g : gradients) {
        auto it = shards_.find(g.name);
        if (it == shards_.end()) {
          result = absl::NotFoundError("no variable shard " + g.name +
                                       " on this parameter server: the model differs");
          break;
        }
        if (g.values.size() != it->second.values.size()) {
          result = absl::InvalidArgumentError(
              "gradient for " + g.name + " has " + std::to_string(g.values.size()) +
              " elements, the variable " + std::to_string(it->second.values.size()));
          break;
        }
      }
      if (!result.ok()) {
        // An invalid push is reported below and changes nothing.
      } else if (!spec_.sync) {
        for (const auto& g : gradients) ApplyLocked(shards_[g.name], g.values);
        ++step_;
        result = PushResult{PushOutcome::kApplied, step_};
      } else if (step != step_ || (worker >= 0 && contributors_.count(worker) > 0)) {
        result = PushResult{PushOutcome::kStale, step_};
      } else {
        if (worker >= 0) contributors_.insert(worker);
        for (const auto& g : gradients) {
          Shard& shard = shards_[g.name];
          if (shard.accumulator.empty()) {
            shard.accumulator.assign(g.values.begin(), g.values.end());
            touched_.push_back(g.name);
          } else {
            float* acc = shard.accumulator.data();
            const float* in = g.values.data();
            const std::size_t n = g.values.size();
            for (std::size_t i = 0; i < n; ++i) acc[i] += in[i];
          }
        }
        waiting_.push_back(std::move(done));
        if (static_cast<int>(waiting_.size()) < spec_.replicas_to_aggregate) return;
        const float scale = 1.0f / static_cast<float>(waiting_.size());
        for (const auto& name : touched_) {
          Shard& shard = shards_[name];
          for (float& v : shard.accumulator) v *= scale;
          ApplyLocked(shard, shard.accumulator);
          shard.accumulator.clear();
        }
        touched_.clear();
        contributors_.clear();
        ++step_;
        released.swap(waiting_);
        result = PushResult{PushOutcome::kApplied, step_};
      }
    }
  }
  if (!released.empty()) {
    for (auto& d : released) d(result);
    return;
  }
  done(std::move(result));
}

absl::StatusOr<std::pair<std::int64_t, std::vector<ShardState>>> ParameterStore::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) return NotInitialized();
  std::vector<ShardState> out;
  out.reserve(shards_.size());
  for (const auto& [name, shard] : shards_) out.push_back({name, shard.values, shard.slots});
  return std::make_pair(step_, std::move(out));
}

void ParameterStore::MarkDone() {
  std::vector<Done> released;
  std::int64_t step;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    step = step_;
    released.swap(waiting_);
    for (const auto& name : touched_) shards_[name].accumulator.clear();
    touched_.clear();
    contributors_.clear();
  }
  for (auto& d : released) d(PushResult{PushOutcome::kDone, step});
}

}  // namespace taas::ps
