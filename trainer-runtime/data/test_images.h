// Private to the data module's image tests: PNG files written by libpng itself in any colour type
// and bit depth, progressive JPEGs (the baseline ones come from data::EncodeJpeg), and small
// pictures to write.
#pragma once

#include <png.h>

// jpeglib.h needs <cstdio> (FILE) first.
// clang-format off
#include <cstdio>
#include <jpeglib.h>
// clang-format on

#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "taas/data/image.h"

namespace taas::data::testing {

struct PngPicture {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  int color_type = PNG_COLOR_TYPE_GRAY;
  int bit_depth = 8;
  bool interlaced = false;
  std::vector<std::uint8_t> rows;  // height rows in libpng's layout (packed, 16-bit big-endian)
  std::vector<png_color> palette = {};     // PNG_COLOR_TYPE_PALETTE
  std::vector<png_byte> transparent = {};  // a tRNS chunk for the palette's entries
};

namespace internal {

inline void AppendPng(png_structp png, png_bytep data, png_size_t size) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<char*>(data), size);
}

// libpng's errors longjmp back here; nothing in this frame has a destructor.
inline bool WritePngRows(png_structp png, png_infop info, const PngPicture& picture,
                         png_bytepp rows) {
  if (setjmp(png_jmpbuf(png)) != 0) return false;
  png_set_IHDR(png, info, picture.width, picture.height, picture.bit_depth, picture.color_type,
               picture.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (!picture.palette.empty()) {
    png_set_PLTE(png, info, picture.palette.data(), static_cast<int>(picture.palette.size()));
  }
  if (!picture.transparent.empty()) {
    png_set_tRNS(png, info, picture.transparent.data(),
                 static_cast<int>(picture.transparent.size()), nullptr);
  }
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

}  // namespace internal

// The PNG file's bytes, or empty when libpng refused the picture.
inline std::string WritePng(const PngPicture& picture) {
  std::string out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, &out, internal::AppendPng, nullptr);
  std::vector<png_bytep> rows(picture.height);
  const std::size_t row_bytes = picture.height == 0 ? 0 : picture.rows.size() / picture.height;
  for (std::uint32_t y = 0; y < picture.height; ++y) {
    rows[y] = const_cast<png_bytep>(picture.rows.data() + y * row_bytes);
  }
  const bool written = internal::WritePngRows(png, info, picture, rows.data());
  png_destroy_write_struct(&png, &info);
  return written ? out : std::string();
}

// A progressive JPEG (libjpeg's simple progression: 10 scans for colour) at quality 90, which
// EncodeJpeg does not write. libjpeg's default error manager exits, which a picture made here from
// valid pixels never makes it do.
inline std::string ProgressiveJpeg(const Pixels& pixels) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr errors;
  cinfo.err = jpeg_std_error(&errors);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(pixels.width);
  cinfo.image_height = static_cast<JDIMENSION>(pixels.height);
  cinfo.input_components = static_cast<int>(pixels.channels);
  cinfo.in_color_space = pixels.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 90, TRUE);
  jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels.data.data() +
                                        cinfo.next_scanline * pixels.width * pixels.channels);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::string out(reinterpret_cast<char*>(buffer), size);
  std::free(buffer);
  jpeg_destroy_compress(&cinfo);
  return out;
}

// A height x width picture of `channels` 8-bit samples, each a different value (a gradient), so a
// shifted, flipped or resized image differs from it.
inline Pixels Gradient(std::int64_t height, std::int64_t width, std::int64_t channels) {
  Pixels pixels{height, width, channels, {}};
  for (std::int64_t y = 0; y < height; ++y) {
    for (std::int64_t x = 0; x < width; ++x) {
      for (std::int64_t c = 0; c < channels; ++c) {
        pixels.data.push_back(static_cast<std::uint8_t>((y * 37 + x * 11 + c * 80) % 256));
      }
    }
  }
  return pixels;
}

// The picture as an 8-bit gray or RGB PNG.
inline std::string PngOf(const Pixels& pixels) {
  PngPicture picture;
  picture.width = static_cast<std::uint32_t>(pixels.width);
  picture.height = static_cast<std::uint32_t>(pixels.height);
  picture.color_type = pixels.channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB;
  picture.rows = pixels.data;
  return WritePng(picture);
}

}  // namespace taas::data::testing
