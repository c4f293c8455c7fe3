// TF's `tf.train.ExponentialMovingAverage`: shadow copies of variables used for evaluation.
//
// With num_updates n the decay used is min(decay, (1 + n) / (10 + n)), so early averages follow
// the variables closely; shadow -= (1 - d) * (shadow - value). Shadows start at the variable's
// value when it is first tracked. Not thread-safe; one owner (the chief or the evaluator).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "taas/tensor/tensor.h"
#include "taas/tensor/variable.h"

namespace taas::optim {

class ExponentialMovingAverage {
 public:
  explicit ExponentialMovingAverage(float decay) : decay_(decay) {}

  // The decay applied at `num_updates`; a negative count means "no count given" (plain decay).
  static float DecayAt(float decay, std::int64_t num_updates);
  // One element-wise update of a shadow span towards `value` (also usable on a PS shard).
  static void Update(std::span<float> shadow, std::span<const float> value, float decay);

  // Starts averaging `variables` (pointers must stay valid); shadows copy the current values.
  // Variables already tracked (by name) keep their shadow.
  void Track(const std::vector<Variable*>& variables);
  // Moves every tracked shadow towards its variable's current value.
  void Apply(std::int64_t num_updates);
  // The average of the variable named `name`, or nullptr when it is not tracked.
  const Tensor* Average(const std::string& name) const;
  // Exchanges every tracked variable's value with its shadow: call once to evaluate with the
  // averages, once more to restore the trained values.
  void SwapIntoVariables();

  float decay() const { return decay_; }

 private:
  struct Entry {
    Variable* variable;
    Tensor shadow;
  };
  float decay_;
  std::vector<Entry> entries_;
  std::map<std::string, std::size_t> index_;
};

}  // namespace taas::optim
