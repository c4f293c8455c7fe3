// Private to the runtime: what a replica does once SIGTERM (or SIGINT) came, the pure decisions
// of docs/trainer-runtime.md ("Faults", checkpoint on termination). Every replica finishes (or, a
// PS, serves) the step in flight; the chief saves the job's state at that step within the grace
// (TAAS_TERMINATION_GRACE_SECS from the signal); then each exits with the transient code.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "taas/base/termination.h"
#include "taas/ps/server.h"

namespace taas::runtime {

// What a terminating parameter server does next.
enum class PsTermination {
  kServe,              // the chief's save may still need it
  kExitSaved,          // the chief saved the job's state: nothing more to serve
  kExitDeadline,       // the grace is over: the chief's save, if any, was abandoned
  kExitTrainingDone,   // the chief ended training and asked it to exit (exit 0)
  kExitNothingToSave,  // the chief never initialised it: it holds no state of the job
};

// What the PS knows when it decides.
struct PsTerminationView {
  TerminationDeadline deadline;
  std::chrono::steady_clock::time_point now;
  std::int64_t step = 0;                     // its global step now
  bool initialized = false;                  // the chief initialised or restored it
  bool exit_requested = false;               // the chief's Shutdown(exit) once training ended
  std::optional<ps::SavedCheckpoint> saved;  // the chief's last CheckpointSaved
};

// A save the chief reported (on termination, or its final checkpoint) counts when it came after
// this PS's signal (the chief saved for this termination: the whole job is being ended) or when
// it holds the PS's step now (nothing was trained since it). An older one, at an older step, is
// some earlier termination of the chief alone: the PS serves on until a new one or the deadline.
// A PS the chief never initialised has nothing to serve.
PsTermination DecidePsTermination(const PsTerminationView& view);

// The words for a decision, for its log line.
std::string_view DescribePsTermination(PsTermination decision);

// The error text of a replica's exit on termination: "<what>, 0.0293 s after SIGTERM".
std::string DescribeTermination(std::string_view what, std::string_view signal,
                                double since_signal_secs);

// Whether the chief must save on termination: not when its last checkpoint is already at the
// job's step (a periodic one just now, or the final one).
inline bool NeedsTerminationSave(std::int64_t global_step, std::int64_t last_checkpoint_step) {
  return global_step != last_checkpoint_step;
}

}  // namespace taas::runtime
