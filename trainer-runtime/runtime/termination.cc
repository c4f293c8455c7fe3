#include "termination.h"

#include <cstdio>

namespace taas::runtime {

PsTermination DecidePsTermination(const PsTerminationView& view) {
  if (view.exit_requested) return PsTermination::kExitTrainingDone;
  if (!view.initialized) return PsTermination::kExitNothingToSave;
  if (view.saved &&
      (view.saved->at >= view.deadline.request().at || view.saved->step >= view.step)) {
    return PsTermination::kExitSaved;
  }
  if (view.deadline.Passed(view.now)) return PsTermination::kExitDeadline;
  return PsTermination::kServe;
}

std::string DescribeTermination(std::string_view what, std::string_view signal,
                                double since_signal_secs) {
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.3g", since_signal_secs);
  return std::string(what) + ", " + secs + " s after " + std::string(signal);
}

std::string_view DescribePsTermination(PsTermination decision) {
  switch (decision) {
    case PsTermination::kServe:
      return "serving until the chief saved the job's state";
    case PsTermination::kExitSaved:
      return "the chief saved the job's state";
    case PsTermination::kExitDeadline:
      return "the termination grace is over before the chief saved the job's state";
    case PsTermination::kExitTrainingDone:
      return "training is done";
    case PsTermination::kExitNothingToSave:
      return "the chief never initialised it: nothing to save";
  }
  return "";
}

}  // namespace taas::runtime
