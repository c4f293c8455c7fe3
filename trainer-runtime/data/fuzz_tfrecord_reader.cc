// libFuzzer target: the TFRecord reader (gzip or plain) over any bytes with a 1 MiB record limit,
// each record it accepts (and the input itself) parsed as a tf.train.Example and decoded by a
// spec's decoder. A record it
// returns is within the limit and its checksums matched; nothing throws, aborts or allocates what
// a header claims beyond the limit.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "memory_file.h"
#include "taas/data/example.h"
#include "taas/data/tfrecord.h"

namespace {

void Require(bool condition) {
  if (!condition) std::abort();
}

// Equal features, floats compared by their bits (a NaN is a value here).
bool SameFeatures(const taas::data::Features& a, const taas::data::Features& b) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
    if (i->first != j->first || i->second.index() != j->second.index()) return false;
    const auto* fa = std::get_if<taas::data::FloatList>(&i->second);
    const auto* fb = std::get_if<taas::data::FloatList>(&j->second);
    if (fa != nullptr) {
      if (fa->size() != fb->size() ||
          (!fa->empty() && std::memcmp(fa->data(), fb->data(), fa->size() * sizeof(float)) != 0)) {
        return false;
      }
    } else if (i->second != j->second) {
      return false;
    }
  }
  return true;
}

const taas::data::DecodeFn& Decoder() {
  static const taas::data::DecodeFn decode = [] {
    taas::data::ExampleSpec spec;
    spec.input_feature = "image";
    spec.label_feature = "label";
    spec.example_shape = {2, 2};
    spec.num_classes = 10;
    return *taas::data::MakeExampleDecoder(spec);
  }();
  return decode;
}

// The Example parser and the decoder over `bytes`: what parses serializes and parses back to the
// same features, and a decoded example fits the spec.
void CheckExample(std::string_view bytes) {
  auto features = taas::data::ParseExample(bytes);
  if (features.ok()) {
    auto again = taas::data::ParseExample(taas::data::SerializeExample(*features));
    Require(again.ok() && SameFeatures(*again, *features));
  }
  auto example = Decoder()(bytes);
  if (example.ok()) {
    Require(example->input.size() == 4);
    Require(example->label >= 0 && example->label < 10);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The input as one record too, so the parser is fuzzed past the checksums.
  CheckExample(std::string_view(reinterpret_cast<const char*>(data), size));
  const taas::data::testing::MemoryFile file(data, size);
  taas::data::TfRecordOptions options;
  options.max_record_bytes = 1 << 20;
  auto reader = taas::data::TfRecordReader::Open(file.path(), options);
  if (!reader.ok()) return 0;
  taas::data::Record record;
  for (int i = 0; i < 10000; ++i) {
    auto got = (*reader)->Next(record);
    if (!got.ok() || !*got) break;
    Require(record.bytes.size() <= options.max_record_bytes);
    Require(record.index == i);
    CheckExample(record.bytes);
  }
  return 0;
}
