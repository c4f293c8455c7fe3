#include "termination.h"

#include <doctest/doctest.h>
#include <signal.h>

namespace taas::runtime {
namespace {

using std::chrono::seconds;
using Time = std::chrono::steady_clock::time_point;

const Time kSignalled = Time(seconds(1000));

PsTerminationView At(Time now, std::int64_t step) {
  return {TerminationDeadline({SIGTERM, kSignalled}, seconds(25)),
          now,
          step,
          true,
          false,
          std::nullopt};
}

TEST_CASE("a terminating PS serves until the chief saved, then exits") {
  PsTerminationView view = At(kSignalled + seconds(1), 120);
  CHECK(DecidePsTermination(view) == PsTermination::kServe);
  view.saved = ps::SavedCheckpoint{121, kSignalled + seconds(2)};  // a worker pushed once more
  view.now = kSignalled + seconds(2);
  CHECK(DecidePsTermination(view) == PsTermination::kExitSaved);
}

TEST_CASE("a save reported before the PS's own signal counts only at the PS's step") {
  PsTerminationView view = At(kSignalled + seconds(1), 120);
  // The chief was quicker than this PS's signal, and nothing was trained since.
  view.saved = ps::SavedCheckpoint{120, kSignalled - seconds(1)};
  CHECK(DecidePsTermination(view) == PsTermination::kExitSaved);
  // An hour-old save of the chief's own termination: the state now is not in it.
  view.saved = ps::SavedCheckpoint{40, kSignalled - seconds(3600)};
  CHECK(DecidePsTermination(view) == PsTermination::kServe);
}

TEST_CASE("the deadline ends the wait; the end of training wins over both") {
  PsTerminationView view = At(kSignalled + seconds(25), 120);
  CHECK(DecidePsTermination(view) == PsTermination::kExitDeadline);
  view.now = kSignalled + seconds(24);
  CHECK(DecidePsTermination(view) == PsTermination::kServe);
  view.exit_requested = true;
  CHECK(DecidePsTermination(view) == PsTermination::kExitTrainingDone);
  CHECK(DescribePsTermination(PsTermination::kExitDeadline).find("grace") !=
        std::string_view::npos);
}

TEST_CASE("a termination's exit text says what was done and when") {
  CHECK(DescribeTermination("the job's state is saved at global step 318", "SIGTERM", 0.029259) ==
        "the job's state is saved at global step 318, 0.0293 s after SIGTERM");
  CHECK(DescribeTermination("the step in flight finished", "SIGINT", 12.5) ==
        "the step in flight finished, 12.5 s after SIGINT");
}

TEST_CASE("a PS the chief never initialised, or whose final checkpoint is saved, may go") {
  PsTerminationView view = At(kSignalled + seconds(1), 0);
  view.initialized = false;
  CHECK(DecidePsTermination(view) == PsTermination::kExitNothingToSave);
  // The chief saved its final checkpoint, then failed (its final evaluate(), say) before it
  // asked the PS to exit: the PS's step is in that checkpoint.
  view = At(kSignalled + seconds(1), 50);
  view.saved = ps::SavedCheckpoint{50, kSignalled - seconds(2)};
  CHECK(DecidePsTermination(view) == PsTermination::kExitSaved);
}

TEST_CASE("the chief saves on termination unless its last checkpoint holds the step") {
  CHECK(NeedsTerminationSave(120, 100));
  CHECK(NeedsTerminationSave(120, -1));  // no checkpoint yet
  CHECK_FALSE(NeedsTerminationSave(120, 120));
}

}  // namespace
}  // namespace taas::runtime
