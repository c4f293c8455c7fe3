// tf.train.Example, the record most TFRecord files hold: features by name, each a list of bytes,
// floats or int64s. ParseExample reads one for any use; MakeExampleDecoder makes the decode step
// of a stream pipeline (stream_pipeline.h) from the names of the input and label features.
//
//   data::ExampleSpec spec;
//   spec.input_feature = "image_raw";   // bytes of 784 uint8 pixels, or a float_list of 784
//   spec.label_feature = "label";       // an int64_list of one class
//   spec.example_shape = {28, 28, 1};
//   spec.num_classes = 10;
//   TAAS_ASSIGN_OR_RETURN(data::DecodeFn decode, data::MakeExampleDecoder(spec));
//
// The bytes are untrusted: a record that is not an Example, a missing feature, a feature of
// another kind or size is an error saying so, never a crash.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "taas/base/status.h"
#include "taas/data/records.h"
#include "taas/tensor/tensor.h"

namespace taas::data {

using BytesList = std::vector<std::string>;
using FloatList = std::vector<float>;
using Int64List = std::vector<std::int64_t>;
// One feature's values: tf.train.Feature's bytes_list, float_list or int64_list, or none set
// (monostate), which TensorFlow reads as an empty list.
using Feature = std::variant<std::monostate, BytesList, FloatList, Int64List>;
using Features = std::map<std::string, Feature>;

// DataLoss when `record` is not a serialized tf.train.Example (or is over 2 GiB, protobuf's
// limit).
absl::StatusOr<Features> ParseExample(std::string_view record);
// The serialized tf.train.Example, as TensorFlow's SerializeToString writes it (feature order
// aside: a map's order is not part of the format).
std::string SerializeExample(const Features& features);

// Decodes an encoded image (a bytes feature: JPEG, PNG) into exactly out.size() floats in the
// layout of the spec's example_shape. Called from several decode threads at once. The seam for
// image decoders: MakeImageDecoder (image.h) decodes JPEG and PNG.
using ImageDecoder = std::function<absl::Status(std::string_view encoded, std::span<float> out)>;

struct ExampleSpec {
  // The model's input: a float_list or int64_list of as many values as example_shape holds, or a
  // bytes_list of one value, either decoded by image_decoder or, without one, raw uint8 values
  // (one byte per element) times bytes_scale.
  std::string input_feature;
  // The class: an int64_list of one value.
  std::string label_feature;
  Shape example_shape;
  std::int64_t num_classes = 0;  // > 0: a label outside [0, num_classes) is an error
  float bytes_scale = 1.0f / 255.0f;
  ImageDecoder image_decoder;
};

// InvalidArgument naming the field for an empty feature name or an empty or non-positive
// example_shape. The decoder's errors (DataLoss) name the feature and what it holds, and the
// features the record has when the one asked for is missing.
absl::StatusOr<DecodeFn> MakeExampleDecoder(ExampleSpec spec);

}  // namespace taas::data
