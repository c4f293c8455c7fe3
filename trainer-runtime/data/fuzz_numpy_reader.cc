// libFuzzer target: any bytes as an .npy file and as an .npz archive (members x and y), their
// headers parsed, their examples read and decoded; and the bytes as a zip directory and as a
// record. A header that parses declares exactly the bytes the file holds, a record decodes into
// what the header's shape says, and nothing throws, aborts or allocates what a header claims.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "memory_file.h"
#include "taas/data/numpy.h"
#include "zip_archive.h"

namespace {

void Require(bool condition) {
  if (!condition) std::abort();
}

// Reads every example of `part` (at most 10,000), each decoded to the inspected sizes.
void ReadPart(const taas::data::NumpyPart& part, const taas::data::NumpySpec& spec) {
  auto shapes = taas::data::InspectNumpyPart(part, spec);
  if (!shapes.ok()) return;
  std::int64_t elements = 1;
  for (std::int64_t d : shapes->example_shape) elements *= d;
  auto dataset = taas::data::NumpyDataset::Create({part}, spec);
  Require(dataset.ok());
  auto reader = (*dataset)->Open(0);
  Require(reader.ok());  // what inspected well opens
  static const taas::data::DecodeFn decode = *taas::data::MakeNumpyDecoder(spec);
  taas::data::Record record;
  for (std::int64_t i = 0; i < 10000; ++i) {
    auto got = (*reader)->Next(record);
    if (!got.ok() || !*got) {
      Require(!got.ok() || i == shapes->examples);
      break;
    }
    auto example = decode(record.bytes);
    Require(example.ok());  // float targets: every record of a checked part decodes
    Require(static_cast<std::int64_t>(example->input.size()) == elements);
    Require(static_cast<std::int64_t>(example->target.size()) == shapes->target_elements);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  static const taas::data::DecodeFn classes = *taas::data::MakeNumpyDecoder({});
  (void)classes(bytes);
  (void)taas::data::internal::ListZipMembers(bytes);
  auto header_bytes = taas::data::NpyHeaderBytes(bytes.substr(0, taas::data::kNpyPreambleBytes),
                                                 std::uint64_t{1} << 16);
  if (header_bytes.ok() && *header_bytes <= size) {
    auto header = taas::data::ParseNpyHeader(bytes.substr(0, *header_bytes), size);
    if (header.ok()) Require(header->header_bytes + header->data_bytes == size);
  }
  const taas::data::testing::MemoryFile file(data, size);
  taas::data::NumpySpec spec;
  spec.label_kind = taas::data::LabelKind::kFloatTarget;
  ReadPart({{file.path(), ""}, {file.path(), ""}}, spec);
  ReadPart({{file.path(), "x"}, {file.path(), "y"}}, spec);
  return 0;
}
