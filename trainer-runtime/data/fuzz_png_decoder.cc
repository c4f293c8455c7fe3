// libFuzzer target: the PNG decoder (libpng behind DecodePixels) over any bytes after PNG's
// signature, so the fuzzer spends its time inside libpng and our callbacks, not in the format
// sniffing.
#include <cstdint>
#include <string>

#include "fuzz_image_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string bytes("\x89PNG\r\n\x1a\n", 8);
  bytes.append(reinterpret_cast<const char*>(data), size);
  taas::data::testing::FuzzImageDecoder(bytes);
  return 0;
}
