// Private to the data module's image fuzz targets: one input decoded as both channel counts
// under a small pixel limit, and what decodes resized and cropped into a fixed spec. An image
// that decodes has the size it says; nothing crashes, hangs or allocates past the limit.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "taas/data/image.h"

namespace taas::data::testing {

inline void FuzzImageDecoder(std::string_view bytes) {
  constexpr std::int64_t kMaxPixels = std::int64_t{1} << 20;  // the fuzzer's RSS limit allows it
  for (const std::int64_t channels : {1, 3}) {
    auto pixels = DecodePixels(bytes, channels, kMaxPixels);
    if (!pixels.ok()) continue;
    if (pixels->channels != channels || pixels->height < 1 || pixels->width < 1 ||
        pixels->height * pixels->width > kMaxPixels ||
        pixels->data.size() !=
            static_cast<std::size_t>(pixels->height * pixels->width * channels)) {
      std::abort();
    }
    ImageSpec spec;
    spec.height = spec.width = 5;
    spec.resize_height = 7;
    spec.resize_width = 9;
    spec.channels = channels;
    spec.random_crop = spec.random_flip = true;
    std::vector<float> out(static_cast<std::size_t>(5 * 5 * channels));
    ResizeAndCrop(*pixels, spec, PlaceCrop(spec, bytes.size()), out);
    for (const float value : out) {
      if (!(value >= 0.0f && value <= 1.0f)) std::abort();
    }
  }
}

}  // namespace taas::data::testing
