// libFuzzer target: the JPEG decoder (libjpeg-turbo behind DecodePixels) over any bytes that start
// as a JPEG does, so the fuzzer spends its time inside libjpeg and our error manager, not in the
// format sniffing.
#include <cstdint>
#include <string>

#include "fuzz_image_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string bytes = "\xff\xd8\xff";
  bytes.append(reinterpret_cast<const char*>(data), size);
  taas::data::testing::FuzzImageDecoder(bytes);
  return 0;
}
