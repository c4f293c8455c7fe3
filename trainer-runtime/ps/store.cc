#include "taas/ps/store.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string_view>

namespace taas::ps {

void Accumulate(std::span<float> sum, std::span<const float> gradient) {
  float* __restrict out = sum.data();
  const float* __restrict in = gradient.data();
  const std::size_t n = gradient.size();
  for (std::size_t i = 0; i < n; ++i) out[i] += in[i];
}

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
  TAAS_ASSIGN_OR_RETURN(auto optimizer, optim::CreateOptimizer(spec.optimizer));
  const std::size_t slot_count = static_cast<std::size_t>(optimizer->slot_count());
  std::map<std::string, Shard> fresh;
  std::int64_t elements = 0;
  for (auto& s : shards) {
    elements += static_cast<std::int64_t>(s.values.size());
    Shard shard;
    shard.variable = s.variable.empty() ? s.name : std::move(s.variable);
    shard.slots = std::move(s.slots);
    // Zero slots are made by the shard's first update (ApplyLocked): a shard no push names (a
    // model's state that is not trained) never holds any, nor sends any in a snapshot.
    if (shard.slots.size() != slot_count) shard.slots.clear();
    for (auto& slot : shard.slots) {
      if (slot.size() != s.values.size()) slot.assign(s.values.size(), 0.0f);
    }
    shard.values = std::make_shared<std::vector<float>>(std::move(s.values));
    if (!fresh.emplace(s.name, std::move(shard)).second) {
      return absl::InvalidArgumentError("shard " + s.name + " given twice");
    }
  }
  std::vector<Waiting> released;
  {
    std::lock_guard<std::mutex> lock(mu_);
    spec_ = spec;
    optimizer_ = std::move(optimizer);
    shards_ = std::move(fresh);
    elements_ = elements;
    step_ = step;
    ++generation_;
    initialized_ = true;
    done_ = false;
    touched_.clear();
    contributors_.clear();
    released.swap(waiting_);
  }
  Release(released, PushResult{PushOutcome::kReset, step});
  return absl::OkStatus();
}

void ParameterStore::Release(std::vector<Waiting>& waiting, const PushResult& result) {
  const auto now = std::chrono::steady_clock::now();
  for (auto& w : waiting) {
    PushResult r = result;
    r.wait_secs = std::chrono::duration<double>(now - w.since).count();
    w.done(r);
  }
}

ParameterStore::Status ParameterStore::GetStatus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {incarnation_, initialized_, done_, step_, static_cast<std::int64_t>(waiting_.size()),
          elements_};
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
    read(name, *it->second.values);
  }
  return step_;
}

absl::StatusOr<std::int64_t> ParameterStore::PullShared(
    const std::vector<std::string>& names,
    std::vector<std::shared_ptr<const std::vector<float>>>* out) const {
  out->clear();
  out->reserve(names.size());
  TAAS_ASSIGN_OR_RETURN(auto step,
                        Pull(names, [&](const std::string& name, std::span<const float>) {
                          out->push_back(shards_.at(name).values);
                        }));
  return step;
}

std::vector<float>& ParameterStore::MutableValues(Shard& shard) {
  // A reference outside the store (a pull being sent) keeps the old buffer unchanged.
  if (shard.values.use_count() > 1) {
    shard.values = std::make_shared<std::vector<float>>(*shard.values);
  }
  return *shard.values;
}

void ParameterStore::ApplyLocked(Shard& shard, std::span<const float> gradient,
                                 std::size_t offset) {
  const auto slot_count = static_cast<std::size_t>(optimizer_->slot_count());
  if (shard.slots.size() != slot_count) {
    shard.slots.assign(slot_count, std::vector<float>(shard.values->size(), 0.0f));
  }
  std::vector<std::span<float>> slots;
  slots.reserve(shard.slots.size());
  for (auto& s : shard.slots) slots.push_back(std::span<float>(s).subspan(offset, gradient.size()));
  optimizer_->Apply(shard.variable,
                    std::span<float>(MutableValues(shard)).subspan(offset, gradient.size()),
                    gradient, slots, step_);
}

absl::Status ParameterStore::CheckGradientLocked(const std::string& name, std::size_t size) const {
  auto it = shards_.find(name);
  if (it == shards_.end()) {
    return absl::NotFoundError("no variable shard " + name +
                               " on this parameter server: the model differs");
  }
  if (size != it->second.values->size()) {
    return absl::InvalidArgumentError("gradient for " + name + " has " + std::to_string(size) +
                                      " elements, the variable " +
                                      std::to_string(it->second.values->size()));
  }
  return absl::OkStatus();
}

void ParameterStore::Push(std::int64_t step, const std::vector<Gradient>& gradients, Done done,
                          int worker) {
  std::vector<Waiting> released;
  absl::StatusOr<PushResult> result = PushResult{};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!initialized_) {
      result = NotInitialized();
    } else if (done_ || (spec_.max_steps > 0 && step_ >= spec_.max_steps)) {
      result = PushResult{PushOutcome::kDone, step_};
    } else {
      for (const auto& g : gradients) {
        absl::Status valid = CheckGradientLocked(g.name, g.values.size());
        if (!valid.ok()) {
          result = valid;
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
            Accumulate(shard.accumulator, g.values);
          }
        }
        waiting_.push_back({std::move(done), std::chrono::steady_clock::now()});
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
    Release(released, *result);
    return;
  }
  done(std::move(result));
}

absl::StatusOr<std::pair<std::int64_t, std::vector<ShardState>>> ParameterStore::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) return NotInitialized();
  std::vector<ShardState> out;
  out.reserve(shards_.size());
  for (const auto& [name, shard] : shards_) out.push_back({name, *shard.values, shard.slots});
  return std::make_pair(step_, std::move(out));
}

void ParameterStore::MarkDone() {
  std::vector<Waiting> released;
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
  Release(released, PushResult{PushOutcome::kDone, step});
}

absl::StatusOr<std::unique_ptr<ParameterStore::PushStream>> ParameterStore::BeginPush(
    std::int64_t step, std::vector<GradientSize> shards, int worker) {
  std::unique_ptr<PushStream> stream(new PushStream());
  stream->store_ = this;
  stream->step_ = step;
  stream->worker_ = worker;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!initialized_) return NotInitialized();
    std::set<std::string_view> named;
    for (const auto& g : shards) {
      if (g.size < 0)
        return absl::InvalidArgumentError("gradient for " + g.name + " has < 0 elements");
      TAAS_RETURN_IF_ERROR(CheckGradientLocked(g.name, static_cast<std::size_t>(g.size)));
      if (!named.insert(g.name).second) {
        return absl::InvalidArgumentError("gradient for " + g.name + " sent twice in one push");
      }
    }
    stream->sync_ = spec_.sync;
    stream->generation_ = generation_;
    stream->skip_ = done_ || (spec_.max_steps > 0 && step_ >= spec_.max_steps);
    for (const auto& g : shards) stream->total_ += g.size;
    if (stream->sync_) {
      stream->staged_ = TakeStagingLocked(static_cast<std::size_t>(stream->total_));
    }
  }
  stream->shards_ = std::move(shards);
  return stream;
}

std::vector<float> ParameterStore::TakeStagingLocked(std::size_t floats) {
  std::vector<float> buffer;
  if (!spare_staging_.empty()) {
    buffer = std::move(spare_staging_.back());
    spare_staging_.pop_back();
  }
  if (buffer.size() < floats) buffer.resize(floats);
  return buffer;
}

void ParameterStore::ReturnStaging(std::vector<float> buffer) {
  // Enough for the pushes of one step from every worker of a large job; more are freed.
  constexpr std::size_t kMaxSpare = 16;
  std::lock_guard<std::mutex> lock(mu_);
  if (spare_staging_.size() < kMaxSpare) spare_staging_.push_back(std::move(buffer));
}

ParameterStore::PushStream::~PushStream() {
  if (!staged_.empty()) store_->ReturnStaging(std::move(staged_));
}

absl::Status ParameterStore::PushStream::Add(const char* data, std::size_t size) {
  if (partial_size_ > 0) {
    const std::size_t take = std::min(size, sizeof(float) - partial_size_);
    std::memcpy(partial_ + partial_size_, data, take);
    partial_size_ += take;
    data += take;
    size -= take;
    if (partial_size_ < sizeof(float)) return absl::OkStatus();
    partial_size_ = 0;
    TAAS_RETURN_IF_ERROR(Consume(partial_, 1));
  }
  const std::size_t floats = size / sizeof(float);
  TAAS_RETURN_IF_ERROR(Consume(data, floats));
  partial_size_ = size - floats * sizeof(float);
  std::memcpy(partial_, data + floats * sizeof(float), partial_size_);
  return absl::OkStatus();
}

absl::Status ParameterStore::PushStream::Consume(const char* data, std::size_t floats) {
  if (received_ + static_cast<std::int64_t>(floats) > total_) {
    return absl::InvalidArgumentError("push carries more than the announced " +
                                      std::to_string(total_) + " gradient elements");
  }
  const std::int64_t at = received_;
  received_ += static_cast<std::int64_t>(floats);
  if (sync_) {
    std::memcpy(staged_.data() + at, data, floats * sizeof(float));
    return absl::OkStatus();
  }
  // Small pieces of the async path are applied in one locked section per bounce buffer.
  constexpr std::size_t kBounce = 16 << 10;  // floats: 64 KB stays in the L2 cache.
  while (floats > 0) {
    while (element_ == shards_[shard_].size) {
      ++shard_;
      element_ = 0;
    }
    const auto n = static_cast<std::size_t>(
        std::min<std::int64_t>(static_cast<std::int64_t>(floats), shards_[shard_].size - element_));
    const std::size_t m = std::min(n, kBounce);
    if (!skip_) {
      bounce_.resize(m);
      std::memcpy(bounce_.data(), data, m * sizeof(float));
      std::lock_guard<std::mutex> lock(store_->mu_);
      if (store_->generation_ != generation_ || store_->done_ ||
          (store_->spec_.max_steps > 0 && store_->step_ >= store_->spec_.max_steps)) {
        skip_ = true;  // Re-initialised or over: Finish reports it.
      } else {
        store_->ApplyLocked(store_->shards_.at(shards_[shard_].name),
                            std::span<const float>(bounce_.data(), m),
                            static_cast<std::size_t>(element_));
      }
    }
    element_ += static_cast<std::int64_t>(m);
    data += m * sizeof(float);
    floats -= m;
  }
  return absl::OkStatus();
}

void ParameterStore::PushStream::Finish(std::function<void(absl::StatusOr<PushResult>)> done) {
  if (received_ != total_ || partial_size_ != 0) {
    done(absl::InvalidArgumentError("push ended after " + std::to_string(received_) + " of " +
                                    std::to_string(total_) + " gradient elements" +
                                    (partial_size_ != 0 ? " and a partial float" : "")));
    return;
  }
  if (sync_) {
    std::vector<Gradient> gradients;
    gradients.reserve(shards_.size());
    std::size_t offset = 0;
    for (const auto& shard : shards_) {
      const auto size = static_cast<std::size_t>(shard.size);
      gradients.push_back({shard.name, std::span<const float>(staged_).subspan(offset, size)});
      offset += size;
    }
    store_->Push(step_, gradients, std::move(done), worker_);
    return;
  }
  PushResult result;
  {
    std::lock_guard<std::mutex> lock(store_->mu_);
    if (store_->generation_ != generation_) {
      result = {PushOutcome::kReset, store_->step_};
    } else if (store_->done_ ||
               (store_->spec_.max_steps > 0 && store_->step_ >= store_->spec_.max_steps)) {
      result = {PushOutcome::kDone, store_->step_};
    } else if (skip_) {
      result = {PushOutcome::kDone, store_->step_};
    } else {
      ++store_->step_;
      result = {PushOutcome::kApplied, store_->step_};
    }
  }
  done(result);
}

}  // namespace taas::ps
