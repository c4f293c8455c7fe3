// Ends a blocking call (a watch, a followed log stream) from another thread. The call registers
// what stops it (closing its connection, say); Cancel() runs that and makes cancelled() true, so a
// call that starts after Cancel() returns at once. Thread-safe. Shared by the Kubernetes client and
// the UI server's job seam, so a cancellation passes from one to the other unchanged.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>

namespace taas {

class Cancellation {
 public:
  Cancellation() = default;
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;

  void Cancel();
  bool cancelled() const { return cancelled_.load(); }
  // Makes it usable again for another call.
  void Reset() { cancelled_.store(false); }

  // For the blocking call: `on_cancel` runs once, on Cancel(), while registered; false (and not
  // registered) when already cancelled. Unregister() returns only once a running `on_cancel` has
  // finished, so `on_cancel` may refer to the caller's stack.
  bool Register(std::function<void()> on_cancel);
  void Unregister();

 private:
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::function<void()> on_cancel_;  // guarded by mu_
};

}  // namespace taas
