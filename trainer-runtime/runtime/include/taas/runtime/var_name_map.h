// The names a model's variables have in a source of saved values, and the checks every warm start
// makes before it copies anything: TensorFlow's WarmStartSettings var_name_to_prev_var_name, with
// its rules. One type and one check for every source: another job's checkpoint (warm_start.h),
// and any later one (a safetensors file) that takes the same map.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/tensor/tensor.h"
#include "taas/tensor/variable.h"

namespace taas {

// {the model's variable name, the source's name for it}. A variable that is not a key has the
// same name in both.
using VarNameMap = std::map<std::string, std::string>;

// What a source holds under one name: its element count, and its shape when the source records
// one (taas checkpoints written before shapes were recorded do not: their entries are then
// checked by element count only).
struct SourceTensor {
  std::int64_t elements = 0;
  std::optional<Shape> shape;
  // The source holds the variable's transpose (a matrix): PyTorch's nn.Linear weight is
  // [out, in] where a Dense kernel is [in, out]. The shape must then be 2-D and, reversed, the
  // variable's.
  bool transposed = false;
};
// Looks a name up in the source: nullopt when the source holds nothing under it.
using SourceLookup = std::function<std::optional<SourceTensor>(const std::string& name)>;

// The source's name for each of `chosen` (the variables a warm start copies), in order, once
// everything is checked; InvalidArgument, naming `source` ("checkpoint <prefix>"):
//  - a key of `map` that is not the name of one of `chosen` (TF's rule: an unused rename is
//    usually a typo), naming both names;
//  - a name the source lacks, naming the model's name and the source's;
//  - a shape that differs from the source's (or, without one there, an element count; or, for a
//    transposed one, that is not a matrix or not the variable's reversed), naming the variable,
//    both names and both shapes (or counts).
absl::StatusOr<std::vector<std::string>> MapToSource(const VarNameMap& map,
                                                     const std::vector<Variable*>& chosen,
                                                     const std::string& source,
                                                     const SourceLookup& lookup);

}  // namespace taas
