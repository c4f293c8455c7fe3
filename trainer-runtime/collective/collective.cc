#include "taas/collective/collective.h"

namespace taas::collective {

Handle::Handle(absl::Status status) : state_(std::make_shared<State>()) {
  state_->done = true;
  state_->status = std::move(status);
}

absl::Status Handle::Wait() const {
  std::unique_lock lock(state_->mu);
  state_->done_cv.wait(lock, [&] { return state_->done; });
  return state_->status;
}

Completion::Completion() : state_(std::make_shared<Handle::State>()) {}

void Completion::Finish(absl::Status status) {
  {
    std::lock_guard lock(state_->mu);
    state_->done = true;
    state_->status = std::move(status);
  }
  state_->done_cv.notify_all();
}

absl::Status Collective::Barrier() {
  float token = 0.0f;
  return AllReduce(std::span<float>(&token, 1), ReduceOp::kSum).Wait();
}

}  // namespace taas::collective
