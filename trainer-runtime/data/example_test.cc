#include "taas/data/example.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "taas/data/tfrecord.h"
#include "test_files.h"

namespace taas::data {
namespace {

using testing::Contains;

TEST_CASE("Example round trip: every kind of feature") {
  const Features features = {
      {"pixels", BytesList{std::string("\0\1\xff", 3)}},
      {"floats", FloatList{0.5f, -1.25f, 3e38f}},
      {"ints", Int64List{0, -1, std::int64_t{1} << 62}},
      {"names", BytesList{"a", "", "ccc"}},
      {"empty", FloatList{}},
  };
  auto parsed = ParseExample(SerializeExample(features));
  REQUIRE_MESSAGE(parsed.ok(), parsed.status().message());
  CHECK(*parsed == features);
}

TEST_CASE("as in TensorFlow's map, a name's last entry wins, and a name need not be UTF-8") {
  // Two serialized Examples one after the other parse as one whose entries are both lists'.
  const std::string twice = SerializeExample({{"x", FloatList{1}}, {"y", Int64List{5}}}) +
                            SerializeExample({{"x", FloatList{2, 3}}});
  auto parsed = ParseExample(twice);
  REQUIRE(parsed.ok());
  CHECK(*parsed == Features{{"x", FloatList{2, 3}}, {"y", Int64List{5}}});
  ExampleSpec spec;
  spec.input_feature = "x";
  spec.label_feature = "y";
  spec.example_shape = {2};
  auto decoded = (*MakeExampleDecoder(spec))(twice);
  REQUIRE(decoded.ok());
  CHECK(decoded->input == std::vector<float>{2, 3});

  const Features binary_name = {{"\xff\xfe", BytesList{"v"}}};
  auto read = ParseExample(SerializeExample(binary_name));
  REQUIRE(read.ok());
  CHECK(*read == binary_name);
}

TEST_CASE("bytes that are not an Example are DataLoss") {
  auto parsed = ParseExample("\xff\xff\xff\xff garbage");
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status().code() == absl::StatusCode::kDataLoss);
  CHECK(Contains(parsed.status(), "not a tf.train.Example"));
  auto empty = ParseExample("");  // an Example without features is valid protobuf
  REQUIRE(empty.ok());
  CHECK(empty->empty());
}

ExampleSpec Spec(Shape shape) {
  ExampleSpec spec;
  spec.input_feature = "image";
  spec.label_feature = "label";
  spec.example_shape = std::move(shape);
  spec.num_classes = 10;
  return spec;
}

DecodeFn Decoder(ExampleSpec spec) {
  auto decode = MakeExampleDecoder(std::move(spec));
  REQUIRE_MESSAGE(decode.ok(), decode.status().message());
  return *decode;
}

TEST_CASE("the decoder reads float, int64 and raw bytes inputs and an int64 label") {
  const DecodeFn decode = Decoder(Spec({2, 2}));
  auto floats = decode(SerializeExample({{"image", FloatList{0.1f, 0.2f, 0.3f, 0.4f}},
                                         {"label", Int64List{7}},
                                         {"id", BytesList{"x"}}}));
  REQUIRE_MESSAGE(floats.ok(), floats.status().message());
  CHECK(floats->input == std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f});
  CHECK(floats->label == 7);

  auto ints =
      decode(SerializeExample({{"image", Int64List{1, 2, 3, -4}}, {"label", Int64List{0}}}));
  REQUIRE(ints.ok());
  CHECK(ints->input == std::vector<float>{1, 2, 3, -4});

  auto bytes = decode(SerializeExample(
      {{"image", BytesList{std::string("\0\x33\x66\xff", 4)}}, {"label", Int64List{9}}}));
  REQUIRE(bytes.ok());
  constexpr float kScale = 1.0f / 255.0f;  // ExampleSpec::bytes_scale's default
  CHECK(bytes->input == std::vector<float>{0.0f, 0x33 * kScale, 0x66 * kScale, 1.0f});
  CHECK(bytes->label == 9);
}

TEST_CASE("an encoded bytes feature goes through the spec's image decoder") {
  ExampleSpec spec = Spec({3});
  spec.image_decoder = [](std::string_view encoded, std::span<float> out) -> absl::Status {
    if (encoded != "PNG!") return absl::DataLossError("not a PNG");
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(i) + 0.5f;
    return absl::OkStatus();
  };
  const DecodeFn decode = Decoder(spec);
  auto image = decode(SerializeExample({{"image", BytesList{"PNG!"}}, {"label", Int64List{1}}}));
  REQUIRE(image.ok());
  CHECK(image->input == std::vector<float>{0.5f, 1.5f, 2.5f});
  auto corrupt = decode(SerializeExample({{"image", BytesList{"JPG?"}}, {"label", Int64List{1}}}));
  REQUIRE_FALSE(corrupt.ok());
  CHECK(Contains(corrupt.status(), "feature \"image\": not a PNG"));
}

TEST_CASE("the decoder's errors say what the record holds") {
  const DecodeFn decode = Decoder(Spec({2, 2}));
  auto missing =
      decode(SerializeExample({{"pixels", FloatList{1, 2, 3, 4}}, {"label", Int64List{1}}}));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kDataLoss);
  CHECK(Contains(missing.status(), "no feature \"image\" (it has: label, pixels)"));

  auto short_input =
      decode(SerializeExample({{"image", FloatList{1, 2, 3}}, {"label", Int64List{1}}}));
  REQUIRE_FALSE(short_input.ok());
  CHECK(Contains(short_input.status(), "is a float_list of 3 values, but example_shape holds 4"));

  auto raw = decode(SerializeExample({{"image", BytesList{"abc"}}, {"label", Int64List{1}}}));
  REQUIRE_FALSE(raw.ok());
  CHECK(Contains(raw.status(), "holds 3 bytes, but example_shape holds 4"));
  CHECK(Contains(raw.status(), "image_decoder"));

  auto float_label =
      decode(SerializeExample({{"image", FloatList{1, 2, 3, 4}}, {"label", FloatList{1}}}));
  REQUIRE_FALSE(float_label.ok());
  CHECK(Contains(float_label.status(), "label feature \"label\" is a float_list"));

  auto two_labels =
      decode(SerializeExample({{"image", FloatList{1, 2, 3, 4}}, {"label", Int64List{1, 2}}}));
  REQUIRE_FALSE(two_labels.ok());
  CHECK(Contains(two_labels.status(), "an int64_list of 2 values"));

  auto out_of_range =
      decode(SerializeExample({{"image", FloatList{1, 2, 3, 4}}, {"label", Int64List{10}}}));
  REQUIRE_FALSE(out_of_range.ok());
  CHECK(Contains(out_of_range.status(), "is 10, outside [0, 10) (the model's classes)"));

  auto garbage = decode("\x0a\xff\xff\xff\xff\x0f");
  REQUIRE_FALSE(garbage.ok());
  CHECK(Contains(garbage.status(), "not a tf.train.Example"));
}

TEST_CASE("a spec without names or shape is refused") {
  ExampleSpec spec = Spec({2});
  spec.input_feature.clear();
  CHECK(MakeExampleDecoder(spec).status().code() == absl::StatusCode::kInvalidArgument);
  spec = Spec({});
  CHECK(Contains(MakeExampleDecoder(spec).status(), "example_shape"));
  spec = Spec({2, 0});
  CHECK_FALSE(MakeExampleDecoder(spec).ok());
}

// What testdata/make_tfrecord_fixture.py states example i holds; TensorFlow wrote the files.
Features FixtureExample(int i) {
  return {
      {"floats", FloatList{static_cast<float>(i + 0.5), static_cast<float>(-0.25 * i),
                           static_cast<float>(1e-3 * i)}},
      {"ints", Int64List{i, -i, (std::int64_t{1} << 40) + i}},
      {"label", Int64List{i % 3}},
      {"name", BytesList{"example-" + std::to_string(i)}},
      {"pixels", BytesList{std::string{static_cast<char>(i), static_cast<char>(i + 1),
                                       static_cast<char>(i + 2), static_cast<char>(255 - i)}}},
  };
}

TEST_CASE("TFRecord files written by TensorFlow's own writer read back exactly") {
  for (const char* name : {"tf_examples.tfrecord", "tf_examples.tfrecord.gz"}) {
    CAPTURE(name);
    auto reader = TfRecordReader::Open(std::string(TAAS_DATA_TESTDATA) + "/" + name);
    REQUIRE_MESSAGE(reader.ok(), reader.status().message());
    Record record;
    int count = 0;
    for (;;) {
      auto got = (*reader)->Next(record);
      REQUIRE_MESSAGE(got.ok(), got.status().message());
      if (!*got) break;
      auto features = ParseExample(record.bytes);
      REQUIRE_MESSAGE(features.ok(), features.status().message());
      CHECK(*features == FixtureExample(count));
      ++count;
    }
    CHECK(count == 5);
  }
}

}  // namespace
}  // namespace taas::data
