#include "taas/data/image.h"

// jpeglib.h needs <cstdio> (FILE) first.
// clang-format off
#include <cstdio>
#include <jpeglib.h>
// clang-format on
#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "random.h"

namespace taas::data {
namespace {

constexpr std::int64_t kMaxSide = 65535;  // JPEG's own limit (16-bit sizes)
constexpr int kMaxJpegScans = 1000;       // libjpeg-turbo's TJPARAM_SCANLIMIT is for the same
constexpr std::size_t kMaxPngChunkBytes = std::size_t{8} << 20;  // libpng's default, kept

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < 8; ++i) {
    const auto byte = static_cast<unsigned char>(bytes[i]);
    if (i > 0) out += ' ';
    out += kDigits[byte >> 4];
    out += kDigits[byte & 15];
  }
  return out.empty() ? "no bytes" : out;
}

absl::Status TooLarge(std::string_view format, std::int64_t width, std::int64_t height,
                      std::int64_t max_pixels) {
  return absl::DataLossError(
      std::string(format) + ": the image declares " + std::to_string(width) + " x " +
      std::to_string(height) + " pixels, more than ImageSpec::max_pixels (" +
      std::to_string(max_pixels) + "): raise the limit if the images are that large");
}

// --- JPEG (libjpeg's API; libjpeg-turbo) ---------------------------------------------------
//
// libjpeg reports an error by calling error_exit, which must not return; ours longjmps back to
// the setjmp of the step that called into libjpeg. Those steps (JpegReadHeader, JpegReadPixels)
// hold no object with a destructor, and libjpeg is C, so the jump skips no destructor (the rule
// for setjmp in C++); what outlives a failure (the buffers, the decompressor) is the caller's.
// Warnings (a truncated file's "Premature end of JPEG file", corrupt data skipped) end the
// decode too: the image would be part gray.

struct JpegErrors {
  jpeg_error_mgr mgr;  // first: libjpeg hands back a pointer to it
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

struct JpegProgress {
  jpeg_progress_mgr mgr;  // first, likewise
  JpegErrors* errors;
};

[[noreturn]] void JpegFail(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

void JpegErrorExit(j_common_ptr cinfo) { JpegFail(cinfo); }

void JpegEmitMessage(j_common_ptr cinfo, int level) {
  if (level < 0) JpegFail(cinfo);  // a warning; levels >= 0 are trace messages
}

void JpegProgressMonitor(j_common_ptr cinfo) {
  auto* progress = reinterpret_cast<JpegProgress*>(cinfo->progress);
  auto* decompress = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (decompress->is_decompressor && decompress->input_scan_number > kMaxJpegScans) {
    std::snprintf(progress->errors->message, sizeof(progress->errors->message),
                  "more than %d scans in a progressive JPEG", kMaxJpegScans);
    std::longjmp(progress->errors->jump, 1);
  }
}

// The decompressor and its managers; destroyed (whatever step failed) by its owner.
struct JpegDecoder {
  JpegDecoder() {
    std::memset(&cinfo, 0, sizeof(cinfo));
    std::memset(&errors, 0, sizeof(errors));
    std::memset(&progress, 0, sizeof(progress));
    cinfo.err = jpeg_std_error(&errors.mgr);
    errors.mgr.error_exit = JpegErrorExit;
    errors.mgr.emit_message = JpegEmitMessage;
    progress.mgr.progress_monitor = JpegProgressMonitor;
    progress.errors = &errors;
  }
  ~JpegDecoder() { jpeg_destroy_decompress(&cinfo); }  // safe on a half-made one (mem is null)
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  jpeg_decompress_struct cinfo;
  JpegErrors errors;
  JpegProgress progress;
};

enum class Step { kOk, kFailed, kRefused };

// Creates the decompressor and reads the header, asking for `channels` (1: JCS_GRAYSCALE, 3:
// JCS_RGB, which libjpeg converts to from YCbCr, RGB or gray). kRefused with the message set for
// what libjpeg could decode but we do not take (CMYK, other component counts).
Step JpegReadHeader(JpegDecoder& d, const unsigned char* data, unsigned long size, int channels,
                    std::int64_t max_pixels) {
  if (setjmp(d.errors.jump) != 0) return Step::kFailed;
  jpeg_create_decompress(&d.cinfo);
  d.cinfo.progress = &d.progress.mgr;
  // libjpeg's whole-image buffers (a progressive image's coefficients, 6 bytes a pixel for YCbCr
  // at full resolution) stay within 8 bytes a pixel of the limit, beside 16 MiB for its tables
  // and pools (which the limit counts too); more is an error, not an allocation (libjpeg-turbo
  // has no backing store to spill to).
  d.cinfo.mem->max_memory_to_use = static_cast<long>(
      std::min<std::int64_t>(8 * max_pixels + (std::int64_t{16} << 20),
                             static_cast<std::int64_t>(std::numeric_limits<long>::max())));
  jpeg_mem_src(&d.cinfo, data, size);
  jpeg_read_header(&d.cinfo, TRUE);
  const J_COLOR_SPACE space = d.cinfo.jpeg_color_space;
  const bool known = (space == JCS_GRAYSCALE && d.cinfo.num_components == 1) ||
                     ((space == JCS_YCbCr || space == JCS_RGB) && d.cinfo.num_components == 3);
  if (!known) {
    std::snprintf(d.errors.message, sizeof(d.errors.message),
                  "a JPEG of %d components in colour space %d (CMYK or YCCK?) is not supported: "
                  "convert it to RGB or gray",
                  d.cinfo.num_components, static_cast<int>(space));
    return Step::kRefused;
  }
  d.cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_calc_output_dimensions(&d.cinfo);
  if (d.cinfo.output_components != channels) {
    std::snprintf(d.errors.message, sizeof(d.errors.message),
                  "libjpeg gives %d channels, asked for %d", d.cinfo.output_components, channels);
    return Step::kRefused;
  }
  return Step::kOk;
}

// Decodes the rows into `out` (output_height rows of `row_bytes`).
Step JpegReadPixels(JpegDecoder& d, unsigned char* out, std::size_t row_bytes) {
  if (setjmp(d.errors.jump) != 0) return Step::kFailed;
  jpeg_start_decompress(&d.cinfo);
  while (d.cinfo.output_scanline < d.cinfo.output_height) {
    JSAMPROW row = out + static_cast<std::size_t>(d.cinfo.output_scanline) * row_bytes;
    jpeg_read_scanlines(&d.cinfo, &row, 1);
  }
  jpeg_finish_decompress(&d.cinfo);
  return Step::kOk;
}

absl::StatusOr<Pixels> DecodeJpeg(std::string_view encoded, std::int64_t channels,
                                  std::int64_t max_pixels) {
  JpegDecoder d;
  const auto* data = reinterpret_cast<const unsigned char*>(encoded.data());
  const Step header = JpegReadHeader(d, data, static_cast<unsigned long>(encoded.size()),
                                     static_cast<int>(channels), max_pixels);
  if (header != Step::kOk) {
    return absl::DataLossError(std::string("JPEG: ") + d.errors.message);
  }
  const std::int64_t width = d.cinfo.output_width;
  const std::int64_t height = d.cinfo.output_height;
  if (width < 1 || height < 1 || width * height > max_pixels) {
    return TooLarge("JPEG", width, height, max_pixels);
  }
  Pixels pixels{height, width, channels, {}};
  pixels.data.resize(static_cast<std::size_t>(width * height * channels));
  if (JpegReadPixels(d, pixels.data.data(), static_cast<std::size_t>(width * channels)) !=
      Step::kOk) {
    return absl::DataLossError(std::string("JPEG: ") + d.errors.message +
                               ": a corrupt or truncated file");
  }
  return pixels;
}

// The compressor and the buffer libjpeg writes into (malloc'd by jpeg_mem_dest, ours to free).
struct JpegEncoder {
  JpegEncoder() {
    std::memset(&cinfo, 0, sizeof(cinfo));
    std::memset(&errors, 0, sizeof(errors));
    cinfo.err = jpeg_std_error(&errors.mgr);
    errors.mgr.error_exit = JpegErrorExit;
    errors.mgr.emit_message = JpegEmitMessage;
  }
  ~JpegEncoder() {
    jpeg_destroy_compress(&cinfo);
    std::free(buffer);
  }
  JpegEncoder(const JpegEncoder&) = delete;
  JpegEncoder& operator=(const JpegEncoder&) = delete;

  jpeg_compress_struct cinfo;
  JpegErrors errors;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
};

Step JpegWrite(JpegEncoder& e, const Pixels& pixels, int quality) {
  if (setjmp(e.errors.jump) != 0) return Step::kFailed;
  jpeg_create_compress(&e.cinfo);
  jpeg_mem_dest(&e.cinfo, &e.buffer, &e.size);
  e.cinfo.image_width = static_cast<JDIMENSION>(pixels.width);
  e.cinfo.image_height = static_cast<JDIMENSION>(pixels.height);
  e.cinfo.input_components = static_cast<int>(pixels.channels);
  e.cinfo.in_color_space = pixels.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&e.cinfo);
  jpeg_set_quality(&e.cinfo, quality, TRUE);
  jpeg_start_compress(&e.cinfo, TRUE);
  const std::size_t row_bytes = static_cast<std::size_t>(pixels.width * pixels.channels);
  while (e.cinfo.next_scanline < e.cinfo.image_height) {
    // libjpeg's rows are not const, but it only reads them.
    JSAMPROW row = const_cast<JSAMPROW>(pixels.data.data() + e.cinfo.next_scanline * row_bytes);
    jpeg_write_scanlines(&e.cinfo, &row, 1);
  }
  jpeg_finish_compress(&e.cinfo);
  return Step::kOk;
}

// --- PNG (libpng) --------------------------------------------------------------------------
//
// The same scheme as JPEG's: libpng's error callback longjmps to the setjmp of the step that
// called into libpng (PngReadHeader, PngReadPixels), which hold nothing with a destructor.

struct PngInput {
  const unsigned char* data = nullptr;
  std::size_t size = 0;
  std::size_t offset = 0;
  char message[256] = {};
  char warning[256] = {};  // the last: it often says why the error came ("exceeds user limit")
};

void PngError(png_structp png, png_const_charp message) {
  auto* input = static_cast<PngInput*>(png_get_error_ptr(png));
  std::snprintf(input->message, sizeof(input->message), "%s", message);
  png_longjmp(png, 1);
}

// A warning alone (trouble in an ancillary chunk) does not stop the decode; it is kept to
// explain an error that follows it.
void PngWarning(png_structp png, png_const_charp message) {
  auto* input = static_cast<PngInput*>(png_get_error_ptr(png));
  std::snprintf(input->warning, sizeof(input->warning), "%s", message);
}

// libpng's error, with the warning before it when there was one.
std::string PngMessage(const PngInput& input) {
  std::string message = std::string("PNG: ") + input.message;
  if (input.warning[0] != '\0') message += std::string(" (") + input.warning + ")";
  return message;
}

void PngRead(png_structp png, png_bytep out, png_size_t bytes) {
  auto* input = static_cast<PngInput*>(png_get_io_ptr(png));
  if (bytes > input->size - input->offset) png_error(png, "the file ends inside the image");
  std::memcpy(out, input->data + input->offset, bytes);
  input->offset += bytes;
}

struct PngDecoder {
  ~PngDecoder() {
    if (png != nullptr) png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr);
  }
  png_structp png = nullptr;
  png_infop info = nullptr;
  PngInput input;
};

// Reads the header and sets the transforms to 8-bit gray or RGB: `native_channels` is what the
// file's colour type gives (1 or 3), before our own conversion to what the spec asks.
Step PngReadHeader(PngDecoder& d, std::int64_t max_pixels, png_uint_32& width,
                   png_uint_32& height) {
  if (setjmp(png_jmpbuf(d.png)) != 0) return Step::kFailed;
  const auto side = static_cast<png_uint_32>(std::min<std::int64_t>(max_pixels, PNG_UINT_31_MAX));
  png_set_user_limits(d.png, side, side);              // refused by libpng before it sizes a row
  png_set_chunk_malloc_max(d.png, kMaxPngChunkBytes);  // an ancillary chunk's (zTXt, iCCP) bomb
  png_set_chunk_cache_max(d.png, 1000);
  png_set_read_fn(d.png, &d.input, PngRead);
  png_read_info(d.png, d.info);
  width = png_get_image_width(d.png, d.info);
  height = png_get_image_height(d.png, d.info);
  if (static_cast<std::int64_t>(width) * height > max_pixels) return Step::kRefused;
  const int color = png_get_color_type(d.png, d.info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(d.png);
  if (color == PNG_COLOR_TYPE_GRAY) png_set_expand_gray_1_2_4_to_8(d.png);
  png_set_scale_16(d.png);
  png_set_strip_alpha(d.png);
  png_set_interlace_handling(d.png);
  png_read_update_info(d.png, d.info);
  return Step::kOk;
}

Step PngReadPixels(PngDecoder& d, png_bytepp rows) {
  if (setjmp(png_jmpbuf(d.png)) != 0) return Step::kFailed;
  png_read_image(d.png, rows);
  return Step::kOk;
}

absl::StatusOr<Pixels> DecodePng(std::string_view encoded, std::int64_t max_pixels) {
  PngDecoder d;
  d.input.data = reinterpret_cast<const unsigned char*>(encoded.data());
  d.input.size = encoded.size();
  d.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &d.input, PngError, PngWarning);
  if (d.png != nullptr) d.info = png_create_info_struct(d.png);
  if (d.png == nullptr || d.info == nullptr) {
    return absl::ResourceExhaustedError("PNG: cannot make libpng's decoder (out of memory)");
  }
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  const Step header = PngReadHeader(d, max_pixels, width, height);
  if (header == Step::kRefused) return TooLarge("PNG", width, height, max_pixels);
  if (header == Step::kFailed) return absl::DataLossError(PngMessage(d.input));
  const int native = png_get_channels(d.png, d.info);
  const std::size_t row_bytes = png_get_rowbytes(d.png, d.info);
  if ((native != 1 && native != 3) || png_get_bit_depth(d.png, d.info) != 8 ||
      row_bytes != static_cast<std::size_t>(width) * static_cast<std::size_t>(native)) {
    return absl::DataLossError("PNG: libpng's transforms gave " + std::to_string(native) +
                               " channels of " + std::to_string(png_get_bit_depth(d.png, d.info)) +
                               " bits");
  }
  Pixels pixels{height, width, native, {}};
  pixels.data.resize(row_bytes * height);
  std::vector<png_bytep> rows(height);
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = pixels.data.data() + y * row_bytes;
  if (PngReadPixels(d, rows.data()) != Step::kOk) {
    return absl::DataLossError(PngMessage(d.input) + ": a corrupt or truncated file");
  }
  return pixels;
}

// The pixels with `channels` channels: gray repeated, RGB weighted into gray (BT.601 in integer
// thousandths, rounded).
Pixels ToChannels(Pixels pixels, std::int64_t channels) {
  if (pixels.channels == channels) return pixels;
  const std::size_t count = static_cast<std::size_t>(pixels.height * pixels.width);
  std::vector<std::uint8_t> out(count * static_cast<std::size_t>(channels));
  const std::uint8_t* in = pixels.data.data();
  if (channels == 3) {
    for (std::size_t i = 0; i < count; ++i) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = in[i];
  } else {
    for (std::size_t i = 0; i < count; ++i) {
      out[i] = static_cast<std::uint8_t>(
          (299 * in[3 * i] + 587 * in[3 * i + 1] + 114 * in[3 * i + 2] + 500) / 1000);
    }
  }
  pixels.data = std::move(out);
  pixels.channels = channels;
  return pixels;
}

std::int64_t ResizeHeight(const ImageSpec& spec) {
  return spec.resize_height > 0 ? spec.resize_height : spec.height;
}
std::int64_t ResizeWidth(const ImageSpec& spec) {
  return spec.resize_width > 0 ? spec.resize_width : spec.width;
}

// For each output coordinate 0..count-1 at offset `start` of a resize from `in` to `out`: the two
// source coordinates and the second one's weight (pixel centres mapped onto pixel centres,
// clamped at the edges).
struct Taps {
  std::vector<std::int64_t> low;
  std::vector<std::int64_t> high;
  std::vector<float> weight;
};

Taps MakeTaps(std::int64_t in, std::int64_t out, std::int64_t start, std::int64_t count) {
  Taps taps;
  taps.low.resize(static_cast<std::size_t>(count));
  taps.high.resize(static_cast<std::size_t>(count));
  taps.weight.resize(static_cast<std::size_t>(count));
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  for (std::int64_t i = 0; i < count; ++i) {
    double source = (static_cast<double>(start + i) + 0.5) * scale - 0.5;
    source = std::clamp(source, 0.0, static_cast<double>(in - 1));
    const auto low = static_cast<std::int64_t>(source);
    const auto k = static_cast<std::size_t>(i);
    taps.low[k] = low;
    taps.high[k] = std::min(low + 1, in - 1);
    taps.weight[k] = static_cast<float>(source - static_cast<double>(low));
  }
  return taps;
}

}  // namespace

Shape ImageShape(const ImageSpec& spec) { return {spec.height, spec.width, spec.channels}; }

absl::Status CheckImageSpec(const ImageSpec& spec) {
  auto side = [](std::int64_t value, const char* field, std::int64_t least) -> absl::Status {
    if (value < least || value > kMaxSide) {
      return absl::InvalidArgumentError("image spec: " + std::string(field) + " must be in [" +
                                        std::to_string(least) + ", " + std::to_string(kMaxSide) +
                                        "], got " + std::to_string(value));
    }
    return absl::OkStatus();
  };
  TAAS_RETURN_IF_ERROR(side(spec.height, "height", 1));
  TAAS_RETURN_IF_ERROR(side(spec.width, "width", 1));
  if (spec.channels != 1 && spec.channels != 3) {
    return absl::InvalidArgumentError("image spec: channels must be 1 (gray) or 3 (RGB), got " +
                                      std::to_string(spec.channels));
  }
  if (spec.resize_height != 0) {
    TAAS_RETURN_IF_ERROR(side(spec.resize_height, "resize_height (0: height)", spec.height));
  }
  if (spec.resize_width != 0) {
    TAAS_RETURN_IF_ERROR(side(spec.resize_width, "resize_width (0: width)", spec.width));
  }
  if (spec.max_pixels < 1) {
    return absl::InvalidArgumentError("image spec: max_pixels must be >= 1, got " +
                                      std::to_string(spec.max_pixels));
  }
  return absl::OkStatus();
}

ImageFormat SniffImageFormat(std::string_view bytes) {
  if (bytes.size() >= 3 && bytes.substr(0, 3) == "\xff\xd8\xff") return ImageFormat::kJpeg;
  if (bytes.size() >= 8 && bytes.substr(0, 8) == "\x89PNG\r\n\x1a\n") return ImageFormat::kPng;
  return ImageFormat::kUnknown;
}

absl::StatusOr<Pixels> DecodePixels(std::string_view encoded, std::int64_t channels,
                                    std::int64_t max_pixels) {
  switch (SniffImageFormat(encoded)) {
    case ImageFormat::kJpeg:
      return DecodeJpeg(encoded, channels, max_pixels);
    case ImageFormat::kPng: {
      TAAS_ASSIGN_OR_RETURN(Pixels pixels, DecodePng(encoded, max_pixels));
      return ToChannels(std::move(pixels), channels);
    }
    case ImageFormat::kUnknown:
      break;
  }
  return absl::DataLossError("neither a JPEG nor a PNG (the first bytes are " + Hex(encoded) +
                             "): convert the file to JPEG or PNG, or leave it out");
}

CropPlace PlaceCrop(const ImageSpec& spec, std::uint64_t seed) {
  const std::int64_t spare_rows = ResizeHeight(spec) - spec.height;
  const std::int64_t spare_columns = ResizeWidth(spec) - spec.width;
  CropPlace place{spare_rows / 2, spare_columns / 2, false};
  std::uint64_t state = seed;
  if (spec.random_crop) {
    place.top = static_cast<std::int64_t>(internal::NextRandom(state) %
                                          static_cast<std::uint64_t>(spare_rows + 1));
    place.left = static_cast<std::int64_t>(internal::NextRandom(state) %
                                           static_cast<std::uint64_t>(spare_columns + 1));
  }
  if (spec.random_flip) place.flip = (internal::NextRandom(state) & 1) != 0;
  return place;
}

void ResizeAndCrop(const Pixels& pixels, const ImageSpec& spec, const CropPlace& place,
                   std::span<float> out) {
  const std::int64_t c = spec.channels;
  const Taps rows = MakeTaps(pixels.height, ResizeHeight(spec), place.top, spec.height);
  const Taps columns = MakeTaps(pixels.width, ResizeWidth(spec), place.left, spec.width);
  const std::uint8_t* in = pixels.data.data();
  const std::int64_t stride = pixels.width * c;
  constexpr float kScale = 1.0f / 255.0f;
  for (std::int64_t y = 0; y < spec.height; ++y) {
    const auto ky = static_cast<std::size_t>(y);
    const std::uint8_t* top = in + rows.low[ky] * stride;
    const std::uint8_t* bottom = in + rows.high[ky] * stride;
    const float wy = rows.weight[ky];
    float* row_out = out.data() + y * spec.width * c;
    for (std::int64_t x = 0; x < spec.width; ++x) {
      const auto kx = static_cast<std::size_t>(place.flip ? spec.width - 1 - x : x);
      const std::int64_t left = columns.low[kx] * c;
      const std::int64_t right = columns.high[kx] * c;
      const float wx = columns.weight[kx];
      for (std::int64_t k = 0; k < c; ++k) {
        const float upper =
            top[left + k] + wx * (static_cast<float>(top[right + k]) - top[left + k]);
        const float lower =
            bottom[left + k] + wx * (static_cast<float>(bottom[right + k]) - bottom[left + k]);
        row_out[x * c + k] = (upper + wy * (lower - upper)) * kScale;
      }
    }
  }
}

absl::Status DecodeImage(std::string_view encoded, const ImageSpec& spec, std::uint64_t seed,
                         std::span<float> out) {
  TAAS_ASSIGN_OR_RETURN(Pixels pixels, DecodePixels(encoded, spec.channels, spec.max_pixels));
  ResizeAndCrop(pixels, spec, PlaceCrop(spec, seed), out);
  return absl::OkStatus();
}

absl::StatusOr<std::string> EncodeJpeg(const Pixels& pixels, int quality) {
  if ((pixels.channels != 1 && pixels.channels != 3) || pixels.height < 1 || pixels.width < 1 ||
      pixels.height > kMaxSide || pixels.width > kMaxSide ||
      pixels.data.size() !=
          static_cast<std::size_t>(pixels.height * pixels.width * pixels.channels)) {
    return absl::InvalidArgumentError(
        "JPEG: cannot encode " + std::to_string(pixels.height) + " x " +
        std::to_string(pixels.width) + " x " + std::to_string(pixels.channels) + " pixels of " +
        std::to_string(pixels.data.size()) + " bytes: 1 or 3 channels, sides in [1, 65535]");
  }
  if (quality < 1 || quality > 100) {
    return absl::InvalidArgumentError("JPEG: quality must be in [1, 100], got " +
                                      std::to_string(quality));
  }
  JpegEncoder e;
  if (JpegWrite(e, pixels, quality) != Step::kOk) {
    return absl::InternalError(std::string("JPEG: encoding failed: ") + e.errors.message);
  }
  return std::string(reinterpret_cast<const char*>(e.buffer), e.size);
}

absl::StatusOr<ImageDecoder> MakeImageDecoder(ImageSpec spec) {
  TAAS_RETURN_IF_ERROR(CheckImageSpec(spec));
  if (spec.random_crop || spec.random_flip) {
    return absl::InvalidArgumentError(
        "image spec: random_crop and random_flip need each record's seed, which the Example "
        "decoder does not carry: use the central crop here");
  }
  const std::int64_t elements = NumElements(ImageShape(spec));
  return ImageDecoder([spec, elements](std::string_view encoded,
                                       std::span<float> out) -> absl::Status {
    if (static_cast<std::int64_t>(out.size()) != elements) {
      return absl::InvalidArgumentError(
          "the image spec gives " + std::to_string(elements) + " floats, but the example holds " +
          std::to_string(out.size()) + ": set ExampleSpec::example_shape to ImageShape(spec)");
    }
    return DecodeImage(encoded, spec, 0, out);
  });
}

}  // namespace taas::data
