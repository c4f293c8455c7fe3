#include "taas/data/image.h"

#include <doctest/doctest.h>
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "test_files.h"
#include "test_images.h"

namespace taas::data {
namespace {

using testing::Contains;
using testing::Gradient;
using testing::PngOf;
using testing::PngPicture;
using testing::WritePng;

constexpr float kScale = 1.0f / 255.0f;  // the pipelines' scale of an 8-bit value

std::string Jpeg(const Pixels& pixels, int quality = 100) {
  auto encoded = EncodeJpeg(pixels, quality);
  REQUIRE_MESSAGE(encoded.ok(), encoded.status().message());
  return *std::move(encoded);
}

Pixels Decoded(const std::string& encoded, std::int64_t channels) {
  auto pixels = DecodePixels(encoded, channels, std::int64_t{1} << 25);
  REQUIRE_MESSAGE(pixels.ok(), pixels.status().message());
  return *std::move(pixels);
}

int MaxDifference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  REQUIRE(a.size() == b.size());
  int most = 0;
  for (std::size_t i = 0; i < a.size(); ++i) most = std::max(most, std::abs(a[i] - b[i]));
  return most;
}

Pixels Flat(std::int64_t height, std::int64_t width, std::vector<std::uint8_t> color) {
  Pixels pixels{height, width, static_cast<std::int64_t>(color.size()), {}};
  for (std::int64_t i = 0; i < height * width; ++i) {
    pixels.data.insert(pixels.data.end(), color.begin(), color.end());
  }
  return pixels;
}

ImageSpec Spec(std::int64_t height, std::int64_t width, std::int64_t channels) {
  ImageSpec spec;
  spec.height = height;
  spec.width = width;
  spec.channels = channels;
  return spec;
}

std::vector<float> Resized(const Pixels& pixels, const ImageSpec& spec, CropPlace place = {}) {
  std::vector<float> out(static_cast<std::size_t>(NumElements(ImageShape(spec))));
  ResizeAndCrop(pixels, spec, place, out);
  return out;
}

// A PNG's bytes with IHDR's width and height replaced (and its CRC made right again), so libpng
// reads the lie as a valid header.
std::string WithPngSize(std::string png, std::uint32_t width, std::uint32_t height) {
  auto put = [&](std::size_t at, std::uint32_t value) {
    for (int i = 0; i < 4; ++i) png[at + i] = static_cast<char>(value >> (24 - 8 * i));
  };
  put(16, width);  // signature 8, length 4, "IHDR" 4
  put(20, height);
  const auto crc = static_cast<std::uint32_t>(
      ::crc32(0, reinterpret_cast<const Bytef*>(png.data() + 12), 4 + 13));
  put(29, crc);
  return png;
}

// A JPEG's bytes with its frame header's (SOF0) height and width replaced.
std::string WithJpegSize(std::string jpeg, std::uint16_t width, std::uint16_t height) {
  const std::size_t sof = jpeg.find("\xff\xc0");
  REQUIRE(sof != std::string::npos);
  jpeg[sof + 5] = static_cast<char>(height >> 8);
  jpeg[sof + 6] = static_cast<char>(height & 0xff);
  jpeg[sof + 7] = static_cast<char>(width >> 8);
  jpeg[sof + 8] = static_cast<char>(width & 0xff);
  return jpeg;
}

TEST_CASE("the format is told by the first bytes, not by a name") {
  CHECK(SniffImageFormat(Jpeg(Gradient(4, 4, 1))) == ImageFormat::kJpeg);
  CHECK(SniffImageFormat(PngOf(Gradient(4, 4, 1))) == ImageFormat::kPng);
  CHECK(SniffImageFormat("GIF89a...") == ImageFormat::kUnknown);
  CHECK(SniffImageFormat("") == ImageFormat::kUnknown);
  CHECK(SniffImageFormat("\x89PNG") == ImageFormat::kUnknown);  // a signature cut short
}

TEST_CASE("a gray JPEG decodes to its pixels, as gray or as RGB") {
  const Pixels picture = Gradient(28, 28, 1);
  const std::string jpeg = Jpeg(picture);
  const Pixels gray = Decoded(jpeg, 1);
  CHECK(gray.height == 28);
  CHECK(gray.width == 28);
  CHECK(gray.channels == 1);
  CHECK(MaxDifference(gray.data, picture.data) <= 3);  // quality 100: DCT rounding only
  const Pixels rgb = Decoded(jpeg, 3);
  REQUIRE(rgb.data.size() == 3 * gray.data.size());
  for (std::size_t i = 0; i < gray.data.size(); ++i) {
    CHECK(rgb.data[3 * i] == gray.data[i]);
    CHECK(rgb.data[3 * i + 2] == gray.data[i]);
  }
}

TEST_CASE("a colour JPEG decodes to RGB, or to gray by BT.601's weights") {
  const Pixels orange = Flat(16, 16, {255, 128, 0});
  const std::string jpeg = Jpeg(orange);
  CHECK(MaxDifference(Decoded(jpeg, 3).data, orange.data) <= 3);
  const int luma = (299 * 255 + 587 * 128 + 114 * 0 + 500) / 1000;  // 151
  CHECK(MaxDifference(Decoded(jpeg, 1).data, Flat(16, 16, {std::uint8_t(luma)}).data) <= 2);
}

TEST_CASE("a progressive JPEG decodes as the baseline one does") {
  for (const std::int64_t channels : {1, 3}) {
    CAPTURE(channels);
    const Pixels picture = Gradient(9, 7, channels);
    const std::string progressive = testing::ProgressiveJpeg(picture);
    CHECK(progressive.find("\xff\xc2") != std::string::npos);  // SOF2: progressive
    // Under a limit of the image's own size: libjpeg's coefficient buffers fit its memory cap.
    auto decoded = DecodePixels(progressive, channels, 9 * 7);
    REQUIRE_MESSAGE(decoded.ok(), decoded.status().message());
    CHECK(decoded->width == 7);
    CHECK(decoded->height == 9);
  }
  // One pixel wide: its 8 x 8 blocks hold 8 times its pixels, and libjpeg's pools come on top,
  // beyond 8 bytes a pixel of the limit: the cap's allowance for them decodes it.
  auto narrow = DecodePixels(testing::ProgressiveJpeg(Gradient(512, 1, 1)), 1, 512);
  REQUIRE_MESSAGE(narrow.ok(), narrow.status().message());
  CHECK(narrow->height == 512);
}

TEST_CASE("PNGs of every colour type decode to 8-bit gray or RGB") {
  SUBCASE("gray and RGB, exactly, and RGB to gray by the integer BT.601 rule") {
    const Pixels gray = Gradient(5, 7, 1);
    CHECK(Decoded(PngOf(gray), 1).data == gray.data);
    const Pixels rgb = Gradient(5, 7, 3);
    CHECK(Decoded(PngOf(rgb), 3).data == rgb.data);
    const Pixels to_gray = Decoded(PngOf(rgb), 1);
    for (std::size_t i = 0; i < 35; ++i) {
      const int expected =
          (299 * rgb.data[3 * i] + 587 * rgb.data[3 * i + 1] + 114 * rgb.data[3 * i + 2] + 500) /
          1000;
      CHECK(to_gray.data[i] == expected);
    }
  }
  SUBCASE("alpha is dropped") {
    PngPicture picture{2, 1, PNG_COLOR_TYPE_RGB_ALPHA, 8, false, {10, 20, 30, 0, 40, 50, 60, 255}};
    CHECK(Decoded(WritePng(picture), 3).data == std::vector<std::uint8_t>{10, 20, 30, 40, 50, 60});
    PngPicture gray_alpha{2, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 8, false, {7, 0, 9, 128}};
    CHECK(Decoded(WritePng(gray_alpha), 1).data == std::vector<std::uint8_t>{7, 9});
  }
  SUBCASE("a palette is expanded, its transparency dropped") {
    PngPicture picture{3, 1, PNG_COLOR_TYPE_PALETTE, 8, false, {2, 0, 1}};
    picture.palette = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
    picture.transparent = {0, 128, 255};
    CHECK(Decoded(WritePng(picture), 3).data ==
          std::vector<std::uint8_t>{0, 0, 255, 255, 0, 0, 0, 255, 0});
  }
  SUBCASE("16-bit samples are scaled to 8, 1-bit gray expanded") {
    PngPicture deep{2, 1, PNG_COLOR_TYPE_GRAY, 16, false, {0xff, 0xff, 0x80, 0x00}};
    CHECK(Decoded(WritePng(deep), 1).data == std::vector<std::uint8_t>{255, 128});
    PngPicture bits{8, 1, PNG_COLOR_TYPE_GRAY, 1, false, {0b10100000}};
    CHECK(Decoded(WritePng(bits), 1).data == std::vector<std::uint8_t>{255, 0, 255, 0, 0, 0, 0, 0});
  }
  SUBCASE("interlaced (Adam7)") {
    PngPicture picture{9, 9, PNG_COLOR_TYPE_GRAY, 8, true, Gradient(9, 9, 1).data};
    CHECK(Decoded(WritePng(picture), 1).data == Gradient(9, 9, 1).data);
  }
}

TEST_CASE("resizing is bilinear between pixel centres; the same size is the pixels / 255") {
  const Pixels picture = Gradient(6, 5, 3);
  const std::vector<float> same = Resized(picture, Spec(6, 5, 3));
  for (std::size_t i = 0; i < same.size(); ++i) CHECK(same[i] == picture.data[i] * kScale);
  // 1 x 2 up to 1 x 4: source x = (x + 0.5) / 2 - 0.5, clamped: -0.25, 0.25, 0.75, 1.25.
  const Pixels two{1, 2, 1, {0, 255}};
  const std::vector<float> four = Resized(two, Spec(1, 4, 1));
  CHECK(four[0] == doctest::Approx(0.0));
  CHECK(four[1] == doctest::Approx(0.25));
  CHECK(four[2] == doctest::Approx(0.75));
  CHECK(four[3] == doctest::Approx(1.0));
  // Down by 2: each output is the mean of a 2 x 2 block (its centre lies between them).
  const Pixels block{2, 2, 1, {0, 100, 200, 40}};
  CHECK(Resized(block, Spec(1, 1, 1))[0] == doctest::Approx(85.0 / 255));
}

TEST_CASE("the crop: central by default, random and flipped by the seed when asked") {
  ImageSpec spec = Spec(2, 2, 1);
  spec.resize_height = 4;
  spec.resize_width = 5;
  const CropPlace central = PlaceCrop(spec, 123);
  CHECK(central.top == 1);
  CHECK(central.left == 1);  // (5 - 2) / 2, rounded down
  CHECK_FALSE(central.flip);

  spec.random_crop = spec.random_flip = true;
  std::set<std::pair<std::int64_t, std::int64_t>> places;
  std::set<bool> flips;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const CropPlace place = PlaceCrop(spec, seed);
    CHECK(place.top >= 0);
    CHECK(place.top <= 2);
    CHECK(place.left >= 0);
    CHECK(place.left <= 3);
    places.emplace(place.top, place.left);
    flips.insert(place.flip);
    const CropPlace again = PlaceCrop(spec, seed);
    CHECK(again.top == place.top);
    CHECK(again.left == place.left);
    CHECK(again.flip == place.flip);
  }
  CHECK(places.size() == 12);  // every place of 3 x 4
  CHECK(flips.size() == 2);

  // A crop at (1, 2) of the image at its own size, mirrored.
  const Pixels picture = Gradient(4, 5, 1);
  ImageSpec crop = Spec(2, 2, 1);
  crop.resize_height = 4;
  crop.resize_width = 5;
  const std::vector<float> out = Resized(picture, crop, {1, 2, true});
  CHECK(out[0] == picture.data[1 * 5 + 3] * kScale);
  CHECK(out[1] == picture.data[1 * 5 + 2] * kScale);
  CHECK(out[2] == picture.data[2 * 5 + 3] * kScale);
}

TEST_CASE("a spec that cannot be met is refused, naming the field") {
  CHECK(Contains(CheckImageSpec(Spec(0, 4, 1)), "height must be in [1, 65535], got 0"));
  CHECK(Contains(CheckImageSpec(Spec(4, 4, 2)), "channels must be 1 (gray) or 3 (RGB), got 2"));
  ImageSpec small = Spec(8, 8, 3);
  small.resize_width = 4;
  CHECK(Contains(CheckImageSpec(small), "resize_width (0: width) must be in [8, 65535], got 4"));
  ImageSpec no_pixels = Spec(8, 8, 3);
  no_pixels.max_pixels = 0;
  CHECK(Contains(CheckImageSpec(no_pixels), "max_pixels must be >= 1"));
  CHECK(CheckImageSpec(Spec(28, 28, 1)).ok());
}

TEST_CASE("hostile bytes are errors saying what is wrong, never a crash") {
  const std::string jpeg = Jpeg(Gradient(32, 32, 1), 90);
  const std::string png = PngOf(Gradient(32, 32, 3));
  constexpr std::int64_t kEnough = 1 << 20;  // pixels: more than the pictures'
  SUBCASE("neither JPEG nor PNG") {
    auto gif = DecodePixels("GIF89a\x01\x00", 1, 1000);
    REQUIRE_FALSE(gif.ok());
    CHECK(gif.status().code() == absl::StatusCode::kDataLoss);
    CHECK(Contains(gif.status(), "neither a JPEG nor a PNG (the first bytes are 47 49 46 38"));
    CHECK(Contains(DecodePixels("", 1, 1000).status(), "(the first bytes are no bytes)"));
  }
  SUBCASE("a truncated JPEG, however short") {
    for (std::size_t size : {std::size_t{3}, std::size_t{20}, jpeg.size() / 2, jpeg.size() - 2}) {
      CAPTURE(size);
      auto cut = DecodePixels(jpeg.substr(0, size), 1, kEnough);
      REQUIRE_FALSE(cut.ok());
      CHECK(cut.status().code() == absl::StatusCode::kDataLoss);
      CHECK(Contains(cut.status(), "JPEG: "));
    }
    const absl::Status half = DecodePixels(jpeg.substr(0, jpeg.size() / 2), 1, kEnough).status();
    CHECK_MESSAGE(Contains(half, "Premature end of JPEG file: a corrupt or truncated file"),
                  half.message());
  }
  SUBCASE("a corrupt JPEG") {
    std::string corrupt = jpeg;
    for (std::size_t i = corrupt.size() / 2; i < corrupt.size() / 2 + 40; ++i) corrupt[i] = '\xff';
    auto decoded = DecodePixels(corrupt, 1, kEnough);
    REQUIRE_FALSE(decoded.ok());
    CHECK(Contains(decoded.status(), "JPEG: "));
    std::string bad_marker = jpeg;
    bad_marker[3] = '\x01';  // the marker after SOI
    CHECK_FALSE(DecodePixels(bad_marker, 1, kEnough).ok());
  }
  SUBCASE("a JPEG declaring more pixels than the limit, refused before decoding") {
    auto large = DecodePixels(WithJpegSize(jpeg, 60000, 60000), 1, std::int64_t{1} << 25);
    REQUIRE_FALSE(large.ok());
    CHECK(Contains(large.status(),
                   "JPEG: the image declares 60000 x 60000 pixels, more than "
                   "ImageSpec::max_pixels (33554432)"));
    CHECK(Contains(DecodePixels(jpeg, 1, 32 * 32 - 1).status(), "declares 32 x 32 pixels"));
  }
  SUBCASE("a PNG bomb: a huge declared size, refused before anything is sized by it") {
    auto bomb = DecodePixels(WithPngSize(png, 100000, 100000), 3, std::int64_t{1} << 25);
    REQUIRE_FALSE(bomb.ok());
    CHECK(bomb.status().code() == absl::StatusCode::kDataLoss);
    CHECK(Contains(bomb.status(),
                   "PNG: the image declares 100000 x 100000 pixels, more than "
                   "ImageSpec::max_pixels (33554432): raise the limit"));
    // One side alone over the limit: libpng's own user limit refuses the header.
    CHECK(Contains(DecodePixels(WithPngSize(png, 2000, 1), 3, 1000).status(),
                   "PNG: Invalid IHDR data (Image width exceeds user limit in IHDR)"));
  }
  SUBCASE("a truncated or corrupt PNG") {
    for (std::size_t size : {std::size_t{8}, std::size_t{30}, png.size() / 2, png.size() - 13}) {
      CAPTURE(size);
      auto cut = DecodePixels(png.substr(0, size), 3, kEnough);
      REQUIRE_FALSE(cut.ok());
      CHECK(Contains(cut.status(), "PNG: "));
    }
    std::string bad_crc = png;
    bad_crc[29] ^= 1;  // IHDR's CRC
    CHECK(Contains(DecodePixels(bad_crc, 3, kEnough).status(), "PNG: IHDR: CRC error"));
  }
}

TEST_CASE("the whole decode, and the Example decoder's seam") {
  const Pixels picture = Gradient(8, 8, 1);
  ImageSpec spec = Spec(4, 4, 1);
  spec.resize_height = spec.resize_width = 8;
  std::vector<float> out(16);
  REQUIRE(DecodeImage(PngOf(picture), spec, 0, out).ok());
  CHECK(out[0] == picture.data[2 * 8 + 2] * kScale);  // the central 4 x 4

  auto decoder = MakeImageDecoder(spec);
  REQUIRE(decoder.ok());
  ExampleSpec example;
  example.input_feature = "image";
  example.label_feature = "label";
  example.example_shape = ImageShape(spec);
  example.image_decoder = *decoder;
  auto decode = MakeExampleDecoder(example);
  REQUIRE(decode.ok());
  auto decoded =
      (*decode)(SerializeExample({{"image", BytesList{PngOf(picture)}}, {"label", Int64List{3}}}));
  REQUIRE_MESSAGE(decoded.ok(), decoded.status().message());
  CHECK(decoded->input == out);
  CHECK(decoded->label == 3);

  spec.random_flip = true;
  CHECK(Contains(MakeImageDecoder(spec).status(), "need each record's seed"));
  CHECK(Contains(EncodeJpeg(Pixels{1, 1, 2, {0, 0}}, 90).status(), "1 or 3 channels"));
  CHECK(Contains(EncodeJpeg(picture, 0).status(), "quality must be in [1, 100], got 0"));
}

}  // namespace
}  // namespace taas::data
