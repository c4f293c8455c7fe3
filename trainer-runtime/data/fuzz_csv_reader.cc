// libFuzzer target: the CSV reader over any bytes as a file (gzip or plain) with a 4 KiB row limit,
// each record it gives decoded by the spec's decoder, and the input itself decoded as a record.
// A row never exceeds the limit, a record decodes into the spec's two features or an error, and
// nothing throws, aborts or allocates beyond the limit.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "memory_file.h"
#include "taas/data/csv.h"

namespace {

void Require(bool condition) {
  if (!condition) std::abort();
}

// The columns of the Python fixtures (testdata/make_csv_fixture.py), so they are seeds.
const taas::data::CsvSpec& Spec() {
  static const taas::data::CsvSpec spec = [] {
    taas::data::CsvSpec s;
    s.feature_columns = {"x", "y"};
    s.label_column = "label";
    s.num_classes = 3;
    s.missing_value = 0.0f;
    s.max_row_bytes = 4096;
    return s;
  }();
  return spec;
}

void CheckDecoded(std::string_view record) {
  static const taas::data::DecodeFn decode = *taas::data::MakeCsvDecoder(Spec());
  auto example = decode(record);
  if (!example.ok()) return;
  Require(example->input.size() == 2);
  Require(example->label >= 0 && example->label < 3);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  CheckDecoded(std::string_view(reinterpret_cast<const char*>(data), size));
  const taas::data::testing::MemoryFile file(data, size);
  auto reader = taas::data::CsvReader::Open(file.path(), Spec());
  if (!reader.ok()) return 0;
  taas::data::Record record;
  for (std::int64_t i = 0;; ++i) {
    auto got = (*reader)->Next(record);
    if (!got.ok() || !*got) break;
    Require(record.index == i);
    Require(record.bytes.size() <= Spec().max_row_bytes + 64);
    CheckDecoded(record.bytes);
  }
  return 0;
}
