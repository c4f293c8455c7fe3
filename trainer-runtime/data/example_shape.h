// Private to taas::data: the one check of an example_shape option (the stream pipeline's and an
// Example spec's).
#pragma once

#include <algorithm>
#include <string>

#include "taas/base/status.h"
#include "taas/tensor/tensor.h"

namespace taas::data::internal {

// InvalidArgument "<who>: example_shape must be set, ..." unless every dimension is >= 1.
inline absl::Status CheckExampleShape(const Shape& shape, const std::string& who) {
  if (!shape.empty() &&
      std::all_of(shape.begin(), shape.end(), [](std::int64_t d) { return d >= 1; })) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(who + ": example_shape must be set, each dimension >= 1, got " +
                                    ShapeString(shape));
}

}  // namespace taas::data::internal
