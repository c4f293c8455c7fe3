#include "taas/runtime/var_name_map.h"

#include <set>

namespace taas {

absl::StatusOr<std::vector<std::string>> MapToSource(const VarNameMap& map,
                                                     const std::vector<Variable*>& chosen,
                                                     const std::string& source,
                                                     const SourceLookup& lookup) {
  std::set<std::string> chosen_names;
  for (const Variable* v : chosen) chosen_names.insert(v->name);
  for (const auto& [name, prev] : map) {
    if (!chosen_names.contains(name)) {
      return absl::InvalidArgumentError(
          "warm start: var_name_to_prev_var_name renames " + name + " (to " + prev +
          "), which is not a warm-started variable of the model (not registered, or matched by "
          "no pattern of vars_to_warm_start)");
    }
  }
  std::vector<std::string> names;
  for (const Variable* v : chosen) {
    const auto renamed = map.find(v->name);
    const std::string& prev = renamed == map.end() ? v->name : renamed->second;
    const std::string as = prev == v->name ? "" : " (as " + prev + ")";
    const std::optional<SourceTensor> held = lookup(prev);
    if (!held) {
      return absl::InvalidArgumentError(
          "warm start: " + source + " has no variable " + prev + " for the model's " + v->name +
          (renamed == map.end() ? " (leave it out of vars_to_warm_start, or rename it in "
                                  "var_name_to_prev_var_name)"
                                : " (its entry in var_name_to_prev_var_name)"));
    }
    const std::string model = "the model's has shape " + ShapeString(v->value.shape());
    if (held->transposed && (!held->shape || held->shape->size() != 2)) {
      return absl::InvalidArgumentError(
          "warm start: " + v->name + as + " does not fit: " + model + ", " + source + " holds " +
          (held->shape ? "shape " + ShapeString(*held->shape) : std::string("no shape")) +
          ", not a matrix to transpose (vars_to_transpose)");
    }
    const std::optional<Shape> expected =
        held->transposed ? std::optional<Shape>(Shape{(*held->shape)[1], (*held->shape)[0]})
                         : held->shape;
    if (expected && *expected != v->value.shape()) {
      return absl::InvalidArgumentError(
          "warm start: " + v->name + as + " does not fit: " + model + ", " + source +
          " holds shape " + ShapeString(*held->shape) +
          (held->transposed ? " (transposed: " + ShapeString(*expected) + ")" : std::string()));
    }
    if (held->elements != v->value.size()) {
      return absl::InvalidArgumentError("warm start: " + v->name + as + " does not fit: " + model +
                                        " (" + std::to_string(v->value.size()) + " elements), " +
                                        source + " holds " + std::to_string(held->elements) +
                                        " elements (and no shape)");
    }
    names.push_back(prev);
  }
  return names;
}

}  // namespace taas
