// Private to the data module's tests: a data set small enough to check by hand.
#pragma once

#include <cstdint>
#include <memory>

#include "taas/data/idx.h"

namespace taas::data::testing {

// `n` examples of 2x2 pixels; example i has every pixel = i and label i % 10, so a batch's
// examples are read back from its pixels (pixel * 255).
inline std::shared_ptr<const ImageDataset> TinyDataset(std::int64_t n) {
  auto dataset = std::make_shared<ImageDataset>();
  dataset->count = n;
  dataset->rows = 2;
  dataset->cols = 2;
  for (std::int64_t i = 0; i < n; ++i) {
    for (int p = 0; p < 4; ++p) dataset->pixels.push_back(static_cast<std::uint8_t>(i));
    dataset->labels.push_back(static_cast<std::uint8_t>(i % 10));
  }
  return dataset;
}

}  // namespace taas::data::testing
