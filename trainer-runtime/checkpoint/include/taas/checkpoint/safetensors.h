// The safetensors format (huggingface/safetensors), which taas checkpoints are written in and any
// framework reads in one line (safetensors.numpy.load_file, safetensors.torch.load_file):
//
//   8 bytes      N, the header's length, little-endian unsigned
//   N bytes      JSON: {"<tensor>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]},
//                       ..., "__metadata__": {"<key>": "<string>", ...}}   (padded with spaces)
//   the rest     the tensors' bytes, little-endian, C order; [b, e) is relative to its start
//
// The parser trusts nothing it reads: the header's length is checked against the file's size and
// kMaxHeaderBytes before it is read, every tensor's dtype must be known, its shape's product times
// the dtype's size must be its byte span, and the spans must lie in order inside the data,
// without overlap, covering it exactly (as the reference implementation requires). Every error
// names the file and, for a tensor's fault, the tensor. Thread-compatible: no shared state.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/status.h"

namespace taas::safetensors {

// Headers of real models hold a few lines per tensor; the reference implementation's own cap is
// 100 MB.
inline constexpr std::uint64_t kMaxHeaderBytes = 64 << 20;

// One tensor as the header describes it.
struct TensorInfo {
  std::string name;
  std::string dtype;  // "F32", "F64", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL", ...
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // byte offsets into the data, which starts after the header
  std::uint64_t end = 0;
};

struct Header {
  std::vector<TensorInfo> tensors;  // in the order of their data
  std::map<std::string, std::string> metadata;
  std::uint64_t data_start = 0;  // 8 + N: where the tensors' bytes begin in the file
};

// The number of elements `shape` holds; nullopt when a dimension is negative or the product
// overflows int64 (a hostile header).
std::optional<std::int64_t> Elements(const std::vector<std::int64_t>& shape);

// Bytes per element of a dtype the format defines; 0 for a name it does not.
std::size_t DtypeSize(std::string_view dtype);

// The header's length N from the file's first 8 bytes, checked against `file_size` and
// kMaxHeaderBytes; DataLoss naming `file` otherwise.
absl::StatusOr<std::uint64_t> HeaderLength(std::string_view first_bytes, std::uint64_t file_size,
                                           const std::string& file);

// Parses the N header bytes of `file`, whose data (after the header) is `data_bytes` long.
// DataLoss naming the file (and the tensor) for anything the checks above refuse, for JSON that
// is not an object of tensors, and for metadata that is not a map of strings.
absl::StatusOr<Header> ParseHeader(std::string_view header, std::uint64_t data_bytes,
                                   const std::string& file);

// A tensor to write: float32 values in C order.
struct Float32Tensor {
  std::string name;
  std::vector<std::int64_t> shape;
  const float* values = nullptr;  // shape's product of them; the caller keeps them alive
};

// The header's bytes (8-byte length and JSON, padded to 8 bytes so that the data is aligned) of a
// file holding `tensors` back to back in the given order, with `metadata`. InvalidArgument for a
// name used twice, "__metadata__" as a name or a negative dimension.
absl::StatusOr<std::string> EncodeHeader(const std::vector<Float32Tensor>& tensors,
                                         const std::map<std::string, std::string>& metadata);

// A whole file read as float32 tensors.
struct Float32File {
  Header header;
  std::vector<std::vector<float>> values;  // one per header.tensors, in the same order
};

// Reads and checks a safetensors file; its tensors must be F32 (a tensor of another dtype is
// InvalidArgument naming it, its dtype and the file: convert it before saving, e.g. `.float()` in
// PyTorch). Allocates no more than the file's real size. NotFound when it cannot be opened.
absl::StatusOr<Float32File> ReadFloat32(const std::string& path);

}  // namespace taas::safetensors
