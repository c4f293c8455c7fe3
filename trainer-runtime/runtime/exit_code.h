// Private to the runtime: which exit code a failure gets, and model hooks called so that nothing
// they throw escapes (an uncaught exception aborts with 134, which Kubeflow's ExitCode restart
// policy reads as retryable: the job would restart forever instead of failing).
#pragma once

#include <exception>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "taas/base/log.h"
#include "taas/base/status.h"
#include "taas/runtime/dist_model.h"

namespace taas::runtime {

// Where a failure comes from; with the status it decides the exit code.
enum class FailureSource {
  kConfig,  // flags, TF_*/TAAS_* environment, TF_CONFIG, token files
  kModel,   // the model's hooks: a Status they returned or an exception they threw
  kData,    // data files, checkpoints, the model dir
  kPeer,    // a call to a parameter server
  kWait,    // a bounded wait for a peer or the chief that gave up
  kServer,  // a server of this process (PS, metrics) cannot listen, e.g. its port is still taken
  kTerminated,  // SIGTERM or SIGINT: preempted, evicted or drained; the job's state was saved
};

// The exit code, line for line as the switch in exit_code.cc decides it:
//
//   source   status code                                         exit code
//   any      a fencing refusal (taas::IsFenced: a PS or ring     kExitFenced (4): a newer
//            neighbour saw a newer incarnation of this replica)  incarnation replaced this one
//   kConfig  any                                                 kExitBadConfig (2)
//   kModel   any                                                 kExitModelError (3)
//   kData    any                                                 kExitModelError (3)
//   kPeer    Unavailable, DeadlineExceeded, Cancelled, Aborted   kExitTransient (150)
//            (ps::IsTransient: the peer is gone or a call timed out; a restart can succeed)
//   kPeer    Unauthenticated, PermissionDenied                   kExitBadConfig (2): wrong tokens
//   kPeer    any other (a PS refused what it was sent)           kExitModelError (3)
//   kWait    any                                                 kExitTransient (150)
//   kServer  any                                                 kExitTransient (150): the port
//            may be free after a restart (a previous container still holding it)
//   kTerminated any                                              kExitTransient (150): the job
//            comes back (ExitCode policy, Kueue's requeue) from the checkpoint saved on the signal
//
// Only lost peers and timeouts are transient (>= 128); everything else is permanent (1..127): a
// restart of the same binary with the same input would fail the same way.
int ExitCodeFor(FailureSource source, const absl::Status& status);

// The status for the exception being handled; call only inside a catch block. `hook` names what
// threw ("train()"), the message the exception's type and what().
absl::Status StatusFromCurrentException(std::string_view hook);

// Runs `body` (a call into model code); an exception it throws comes back as a Status naming
// `hook`, so a model's failure takes the same path as a Status it returned.
absl::Status CallModel(std::string_view hook, const std::function<absl::Status()>& body);

// The model's evaluate() through CallModel: the metrics, or the error it returned or threw.
absl::StatusOr<std::map<std::string, double>> EvaluateModel(DistModel& model, Session& session);

// Logs the one line that explains a failed exit (`exiting: <cause>` with the exit code, the last
// global step and the error; a warning for kTerminated, which is no failure of the job; for a
// fencing refusal `exiting: fenced: a newer incarnation of this replica replaced it`) and
// returns the exit code for `source` and `status`.
int Exit(const Logger& logger, std::int64_t global_step, FailureSource source,
         std::string_view cause, const absl::Status& status);

}  // namespace taas::runtime
