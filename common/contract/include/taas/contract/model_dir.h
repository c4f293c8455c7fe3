// Files in a job's model dir (TF_LOGDIR) that another component reads besides the runtime, which
// writes them.
#pragma once

#include <string_view>

namespace taas::contract {

// Left by the chief once training is over; holds the final global step as decimal text. The
// evaluator finishes once it scored that step; the local launcher's progress view ends with it.
inline constexpr std::string_view kTrainingDoneFile = "TRAINING_DONE";

}  // namespace taas::contract
