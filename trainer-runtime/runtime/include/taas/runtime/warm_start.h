// Warm start: initialise chosen variables of a new job from another job's checkpoint, or from a
// safetensors file written elsewhere (PyTorch's safetensors.torch.save_file), as TensorFlow's
// tf.estimator.WarmStartSettings does. Hand the result to the runtime from get_init_fn:
//
//   taas::InitFn get_init_fn() override {
//     return taas::WarmStart({.ckpt_to_initialize_from = "/models/pretrained",
//                             .vars_to_warm_start = {"conv.*"},
//                             .var_name_to_prev_var_name = {{"logits/kernel", "dense/kernel"}}});
//   }
//
// From PyTorch's weights (names and layouts PyTorch's: nn.Linear's weight is [out, in]):
//
//     return taas::WarmStart({.ckpt_to_initialize_from = "/models/mlp.safetensors",
//                             .var_name_to_prev_var_name = {{"dense/kernel", "fc1.weight"},
//                                                           {"dense/bias", "fc1.bias"}},
//                             .vars_to_transpose = {".*/kernel$"}});
//
// The chief runs an init fn only when the job has no checkpoint of its own (a restart resumes
// from the job's checkpoint instead), after the initialisers, before the values reach the
// parameter servers or the other replicas. Variables not warm-started keep their initial values;
// optimizer slots are never warm-started (TF's default): they start at zero.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "taas/runtime/dist_model.h"
#include "taas/runtime/var_name_map.h"

namespace taas {

struct WarmStartSettings {
  // A model dir (its newest checkpoint that verifies), one checkpoint's prefix
  // ("<dir>/model.ckpt-2000", the name without .safetensors), or a safetensors file of float32
  // tensors written by any framework (a path ending in .safetensors; checksums are checked when
  // its metadata has them, as a taas checkpoint's does).
  std::string ckpt_to_initialize_from;
  // Regular expressions (ECMAScript) over the model's variable names; a variable is warm-started
  // when one matches from the start of its name, as TF's re.match does ("dense" also matches
  // "dense_1/kernel"; write "dense/.*" or "dense/kernel$" to be exact). Default: every variable.
  std::vector<std::string> vars_to_warm_start = {".*"};
  // The checkpoint's name for a model variable whose name changed: {model name, name in the
  // checkpoint} (var_name_map.h, with its checks). Every key must be a warm-started variable
  // (TF's rule: an unused rename is an error, usually a typo).
  VarNameMap var_name_to_prev_var_name = {};
  // Regular expressions (matched as vars_to_warm_start's) over the model's names of 2-D variables
  // that the source holds transposed: a PyTorch nn.Linear weight ([out, in]) for a Dense kernel
  // ([in, out]). Their values are copied transposed; their source shapes must be the reverse of
  // the model's. Default: none.
  std::vector<std::string> vars_to_transpose = {};
};

// Copies the matching variables' values from the checkpoint into `variables`. Every failure
// names the checkpoint (or the file): one that cannot be read or holds none (NotFound, DataLoss), a
// bad regular expression, one source tensor that would seed variables both transposed and not,
// and MapToSource's (var_name_map.h): an unused rename, a matched variable the checkpoint lacks
// (both names), or holds with another shape (both shapes, the transposed one too; a checkpoint
// written before shapes were recorded: both element counts). Nothing is copied unless every
// matched variable can be.
// Returns how many variables were warm-started.
absl::StatusOr<int> WarmStartVariables(const WarmStartSettings& settings,
                                       const std::vector<Variable*>& variables);

// An InitFn that runs WarmStartVariables on the session's variables and state (Session::state(),
// matched and renamed by the same settings: a frozen trunk's BatchNorm statistics come with it)
// and logs what it copied.
InitFn WarmStart(WarmStartSettings settings);

}  // namespace taas
