// Encoded images (JPEG and PNG, told apart by their first bytes, never by a file's extension)
// decoded into a model's fixed input: height x width x channels floats in [0, 1] (a pixel's 8-bit
// value divided by 255), row-major (HWC, as the built-in layers and Keras take them). Every image
// is first resized (bilinear) to resize_height x resize_width, then cropped to height x width:
// at a random place and mirrored left to right half the time for training, in the centre for
// evaluation. The image folders (image_folder.h) decode with it, and a tf.train.Example's bytes
// feature can (MakeImageDecoder, example.h's seam).
//
//   data::ImageSpec spec;
//   spec.height = spec.width = 224;
//   spec.channels = 3;
//   spec.resize_height = spec.resize_width = 256;  // then a 224 x 224 crop
//   spec.random_crop = spec.random_flip = true;    // training; false: the central crop
//
// The bytes are untrusted: a corrupt or truncated file is an error (libjpeg's warnings, such as
// "Premature end of JPEG file", included: the image would be part gray), and the size its header
// declares is checked against max_pixels before anything is allocated for it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/status.h"
#include "taas/data/example.h"
#include "taas/tensor/tensor.h"

namespace taas::data {

struct ImageSpec {
  std::int64_t height = 0;  // of the model's input: example_shape {height, width, channels}
  std::int64_t width = 0;
  std::int64_t channels = 3;  // 1: gray; 3: RGB
  // The size every image is resized to before the crop; 0: height (width), so the crop is the
  // whole resized image. At least height (width).
  std::int64_t resize_height = 0;
  std::int64_t resize_width = 0;
  bool random_crop = false;  // training: the crop at a random place; else in the centre
  bool random_flip = false;  // training: mirrored left to right half the time
  // The most pixels (width x height) an image's header may declare. A decoder holds about 8 bytes
  // a pixel of it at most, per decode thread. PIL's own limit is 89 M.
  std::int64_t max_pixels = std::int64_t{1} << 25;
};

// The spec's example_shape, {height, width, channels}.
Shape ImageShape(const ImageSpec& spec);

// InvalidArgument naming the field: a height or width outside [1, 65535], channels other than 1
// or 3, a resize size smaller than the crop or over 65535, max_pixels < 1.
absl::Status CheckImageSpec(const ImageSpec& spec);

enum class ImageFormat { kUnknown, kJpeg, kPng };

// From the first bytes: JPEG's SOI marker (FF D8 FF), PNG's 8-byte signature.
ImageFormat SniffImageFormat(std::string_view bytes);

// An image decoded to 8-bit pixels, rows top to bottom, each pixel's channels together.
struct Pixels {
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::int64_t channels = 0;
  std::vector<std::uint8_t> data;  // height * width * channels
};

// `encoded` decoded to `channels` (1 or 3): gray repeated into R, G and B, colour to gray as
// 0.299 R + 0.587 G + 0.114 B (ITU-R BT.601, JPEG's own Y and PIL's convert("L")), a PNG's
// palette expanded, its alpha (or tRNS) dropped as tf.io.decode_png(channels=3) and PIL's
// convert("RGB") drop it, 16-bit samples scaled to 8. DataLoss saying what is wrong: neither
// JPEG nor PNG (with the first bytes), corrupt or truncated data (libjpeg's or libpng's message),
// a CMYK JPEG, an image of more than max_pixels (its size), a progressive JPEG of more than 1,000
// scans (a way to make a small file decode for minutes).
absl::StatusOr<Pixels> DecodePixels(std::string_view encoded, std::int64_t channels,
                                    std::int64_t max_pixels);

// Where the crop lies in the resized image, and whether it is mirrored.
struct CropPlace {
  std::int64_t top = 0;
  std::int64_t left = 0;
  bool flip = false;
};

// The crop of a spec: random where the spec says (top and left uniform, the flip a coin, drawn
// from `seed`, so the same seed places it the same way), else central, rounding down as Keras'
// CenterCrop and tf.image.central_crop do.
CropPlace PlaceCrop(const ImageSpec& spec, std::uint64_t seed);

// `pixels` resized to the spec's resize size (bilinear on pixel centres, as tf.image.resize in
// TensorFlow 2 and PIL without antialiasing), cropped at `place`, into exactly
// ImageShape(spec)'s elements of `out`, each value / 255. The pixels' channels must be the
// spec's.
void ResizeAndCrop(const Pixels& pixels, const ImageSpec& spec, const CropPlace& place,
                   std::span<float> out);

// DecodePixels, then ResizeAndCrop at PlaceCrop(spec, seed): the whole decode of one image.
absl::Status DecodeImage(std::string_view encoded, const ImageSpec& spec, std::uint64_t seed,
                         std::span<float> out);

// A baseline JPEG of `pixels` (1 or 3 channels) at `quality` in [1, 100] (libjpeg's defaults
// otherwise: 4:2:0 chroma for colour), for writing image folders of your own (the Fashion-MNIST
// folder maker in examples/fashion-mnist-jpeg) and tests. InvalidArgument for other channels, an
// empty image or a quality out of range.
absl::StatusOr<std::string> EncodeJpeg(const Pixels& pixels, int quality);

// The decoder for a tf.train.Example's encoded image (ExampleSpec::image_decoder), with the
// spec's central crop: CheckImageSpec's errors, and InvalidArgument for random_crop or
// random_flip, which need the record's seed that the Example decoder's seam does not carry.
absl::StatusOr<ImageDecoder> MakeImageDecoder(ImageSpec spec);

}  // namespace taas::data
