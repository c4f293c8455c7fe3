#include "taas/base/cancellation.h"

namespace taas {

void Cancellation::Cancel() {
  cancelled_.store(true);
  // Run under the lock: Unregister() returns only once a running callback has finished.
  std::lock_guard<std::mutex> lock(mu_);
  std::function<void()> on_cancel = std::move(on_cancel_);
  on_cancel_ = nullptr;
  if (on_cancel) on_cancel();
}

bool Cancellation::Register(std::function<void()> on_cancel) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_.load()) return false;
  on_cancel_ = std::move(on_cancel);
  return true;
}

void Cancellation::Unregister() {
  std::lock_guard<std::mutex> lock(mu_);
  on_cancel_ = nullptr;
}

}  // namespace taas
