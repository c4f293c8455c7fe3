// NumPy arrays as a data set: .npy files (numpy.save) and .npz archives (numpy.savez, stored, and
// numpy.savez_compressed, deflated), the features from one array and the labels from another, the
// first axis the examples. An .npy file and a stored member are memory-mapped, so only the pages
// read are touched; a deflated member is inflated as it is read, never whole.
//
//   TAAS_ASSIGN_OR_RETURN(auto parts, data::NpzParts({"/data/train-*.npz"}, "x", "y"));
//   data::NumpySpec spec;                      // y: int classes; kFloatTarget for a regression
//   spec.num_classes = 10;
//   spec.feature_scale = 1.0f / 255;           // x: uint8 pixels
//   TAAS_ASSIGN_OR_RETURN(auto shapes, data::InspectNumpyPart(parts[0], spec));
//   TAAS_ASSIGN_OR_RETURN(auto files, data::NumpyDataset::Create(parts, spec));
//   options.example_shape = shapes.example_shape;   // x.shape[1:]
//   options.target_elements = shapes.target_elements;
//   TAAS_ASSIGN_OR_RETURN(data::DecodeFn decode, data::MakeNumpyDecoder(spec));
//
// Arrays of float32, float64, int8, int16, int32, int64 and uint8, little-endian, C order. The
// header is parsed strictly (magic, version 1, 2 or 3, the dict's three keys and nothing else) and
// every size is checked before anything is allocated or mapped: a shape whose product overflows,
// a file shorter or longer than its header declares, a big-endian, Fortran-order, object or
// structured array are errors naming the file (and the member) and saying what to do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/status.h"
#include "taas/data/records.h"
#include "taas/tensor/tensor.h"

namespace taas::data {

enum class NpyDtype : std::uint8_t { kFloat32, kFloat64, kInt8, kInt16, kInt32, kInt64, kUint8 };

std::size_t NpyItemBytes(NpyDtype dtype);
std::string_view NpyDescr(NpyDtype dtype);  // numpy's descr: "<f4", "|u1", ...

// The magic, the version and the header's length: the bytes ParseNpyHeader needs first.
inline constexpr std::size_t kNpyPreambleBytes = 12;

struct NpyHeader {
  NpyDtype dtype = NpyDtype::kFloat32;
  std::vector<std::int64_t> shape;  // () for a scalar
  std::uint64_t header_bytes = 0;   // where the data starts
  std::uint64_t data_bytes = 0;     // the shape's product times the item's bytes
};

// The header's whole length (where the data starts) from the first kNpyPreambleBytes of a file
// (fewer when the file is shorter): DataLoss for a file that does not start with the magic, an
// unknown version, a header longer than `max_header_bytes`. Pure, like the rest of the format.
absl::StatusOr<std::uint64_t> NpyHeaderBytes(std::string_view preamble,
                                             std::uint64_t max_header_bytes);

// The header of a file (or member) of `file_bytes` bytes whose first NpyHeaderBytes are `header`.
// DataLoss naming the problem: a dict that is not exactly {'descr': ..., 'fortran_order': ...,
// 'shape': ...}, an unsupported or big-endian dtype, Fortran order, a shape whose bytes overflow,
// data shorter or longer than the file holds.
absl::StatusOr<NpyHeader> ParseNpyHeader(std::string_view header, std::uint64_t file_bytes);

// An .npy file's bytes for an array of `dtype` and `shape` whose data is `data` (as numpy.save
// writes it: version 1.0, the dict padded to a multiple of 64 bytes). For writing arrays, and
// tests.
std::string EncodeNpy(NpyDtype dtype, const std::vector<std::int64_t>& shape,
                      std::string_view data);

// One array: an .npy file, or the member `member` (without ".npy") of an .npz archive.
struct NumpyArray {
  std::string path;
  std::string member;  // empty for an .npy file
};

// One part of a data set: example i is features[i] and labels[i].
struct NumpyPart {
  NumpyArray features;
  NumpyArray labels;
};

// One part per .npz archive the patterns match (file_patterns.h), each holding both arrays.
absl::StatusOr<std::vector<NumpyPart>> NpzParts(const std::vector<std::string>& patterns,
                                                const std::string& features_member,
                                                const std::string& labels_member);

struct NumpySpec {
  // kClass: labels of an integer dtype, shape (N,) or (N, 1); kFloatTarget: any dtype, shape (N,)
  // or (N, ...), as floats.
  LabelKind label_kind = LabelKind::kClass;
  std::int64_t num_classes = 0;              // > 0: a class outside [0, num_classes) is an error
  float feature_scale = 1.0f;                // every feature times this (1/255 for uint8 pixels)
  std::uint64_t max_header_bytes = 1 << 16;  // numpy's own reader stops at 10,000
};

// What a part holds, from its headers alone: the shapes to set StreamOptions to.
struct NumpyShapes {
  std::int64_t examples = 0;
  Shape example_shape;               // features.shape[1:] ({1} for features of shape (N,))
  std::int64_t target_elements = 0;  // labels' elements per example for kFloatTarget, else 0
};

// The part's shapes, or DataLoss naming the file (and member): an array that cannot be read,
// features and labels of different lengths, labels that do not fit the spec's kind.
absl::StatusOr<NumpyShapes> InspectNumpyPart(const NumpyPart& part, const NumpySpec& spec);

// Parts of NumPy arrays; each part's records are its examples, in order, sharded by part when
// there are enough parts, else by example (records.h).
class NumpyDataset : public RecordDataset {
 public:
  // InvalidArgument for no parts or a bad spec. The arrays are opened when read, not here.
  static absl::StatusOr<std::shared_ptr<NumpyDataset>> Create(std::vector<NumpyPart> parts,
                                                              const NumpySpec& spec);

  std::int64_t num_parts() const override;
  // "<features path>[:member] and <labels path>[:member]"
  std::string part_name(std::int64_t part) const override;
  // InspectNumpyPart's errors. A reader's records are example rows, DataLoss naming the array
  // when a deflated member's data is corrupt or cut short.
  absl::StatusOr<std::unique_ptr<RecordReader>> Open(std::int64_t part) const override;

 private:
  NumpyDataset(std::vector<NumpyPart> parts, const NumpySpec& spec);

  std::vector<NumpyPart> parts_;
  NumpySpec spec_;
};

// The decode step for a NumpyDataset's records: the features as floats times feature_scale, the
// label as a class (checked against num_classes) or a float target. DataLoss for a record that is
// not a NumpyDataset's or a class out of range.
absl::StatusOr<DecodeFn> MakeNumpyDecoder(NumpySpec spec);

}  // namespace taas::data
