#include "taas/checkpoint/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

namespace taas::safetensors {
namespace {

// The format is little-endian; so are the machines taas runs on (x86-64, aarch64).
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

constexpr std::size_t kLengthBytes = 8;
// Deeper than any real tensor; bounds the work a hostile shape can cause.
constexpr std::size_t kMaxRank = 32;
constexpr const char* kMetadataKey = "__metadata__";

using Json = nlohmann::json;

absl::Status Bad(const std::string& file, const std::string& what) {
  return absl::DataLossError(file + ": " + what);
}

// A JSON unsigned integer; negative, fractional or other types are refused (as serde's usize).
std::optional<std::uint64_t> Unsigned(const Json& value) {
  if (!value.is_number_unsigned()) return std::nullopt;
  return value.get<std::uint64_t>();
}

absl::StatusOr<TensorInfo> ParseTensor(const std::string& name, const Json& spec,
                                       const std::string& file) {
  const std::string where = "tensor \"" + name + "\": ";
  if (!spec.is_object()) return Bad(file, where + "must be an object");
  TensorInfo info;
  info.name = name;
  const auto dtype = spec.find("dtype");
  if (dtype == spec.end() || !dtype->is_string()) {
    return Bad(file, where + "dtype must be a string");
  }
  info.dtype = dtype->get<std::string>();
  const std::size_t element_size = DtypeSize(info.dtype);
  if (element_size == 0) return Bad(file, where + "unknown dtype \"" + info.dtype + "\"");
  const auto shape = spec.find("shape");
  if (shape == spec.end() || !shape->is_array() || shape->size() > kMaxRank) {
    return Bad(file, where + "shape must be an array of at most " + std::to_string(kMaxRank) +
                         " dimensions");
  }
  for (const Json& d : *shape) {
    const auto dim = Unsigned(d);
    if (!dim || *dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return Bad(file, where + "shape must hold integers >= 0, got " + shape->dump());
    }
    info.shape.push_back(static_cast<std::int64_t>(*dim));
  }
  const auto offsets = spec.find("data_offsets");
  if (offsets == spec.end() || !offsets->is_array() || offsets->size() != 2 ||
      !Unsigned((*offsets)[0]) || !Unsigned((*offsets)[1])) {
    return Bad(file, where + "data_offsets must be two integers >= 0");
  }
  info.begin = *Unsigned((*offsets)[0]);
  info.end = *Unsigned((*offsets)[1]);
  if (info.end < info.begin) {
    return Bad(file, where + "data_offsets [" + std::to_string(info.begin) + ", " +
                         std::to_string(info.end) + "] end before they begin");
  }
  const auto elements = Elements(info.shape);
  if (!elements ||
      static_cast<std::uint64_t>(*elements) >
          std::numeric_limits<std::uint64_t>::max() / element_size ||
      static_cast<std::uint64_t>(*elements) * element_size != info.end - info.begin) {
    return Bad(file, where + "shape " + shape->dump() + " of " + info.dtype +
                         " does not fill its " + std::to_string(info.end - info.begin) +
                         " bytes (data_offsets [" + std::to_string(info.begin) + ", " +
                         std::to_string(info.end) + "])");
  }
  return info;
}

}  // namespace

std::optional<std::int64_t> Elements(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0 || (d > 0 && n > std::numeric_limits<std::int64_t>::max() / d)) return std::nullopt;
    n *= d;
  }
  return n;
}

std::size_t DtypeSize(std::string_view dtype) {
  // The format's dtypes (safetensors' Dtype enum), by the size of one element.
  static const std::map<std::string_view, std::size_t, std::less<>> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

absl::StatusOr<std::uint64_t> HeaderLength(std::string_view first_bytes, std::uint64_t file_size,
                                           const std::string& file) {
  if (first_bytes.size() < kLengthBytes || file_size < kLengthBytes) {
    return Bad(file, std::to_string(file_size) +
                         " bytes: too short for the 8-byte header length of a safetensors file");
  }
  std::uint64_t length = 0;
  std::memcpy(&length, first_bytes.data(), kLengthBytes);
  if (length > kMaxHeaderBytes) {
    return Bad(file, "header length " + std::to_string(length) + " is more than the " +
                         std::to_string(kMaxHeaderBytes) + " a safetensors header may have");
  }
  if (length > file_size - kLengthBytes) {
    return Bad(file, "header length " + std::to_string(length) + " overruns the file's " +
                         std::to_string(file_size) + " bytes");
  }
  return length;
}

absl::StatusOr<Header> ParseHeader(std::string_view header, std::uint64_t data_bytes,
                                   const std::string& file) {
  const Json json = Json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return Bad(file, "the header is not a JSON object");
  }
  Header out;
  out.data_start = kLengthBytes + header.size();
  for (const auto& [key, value] : json.items()) {
    if (key == kMetadataKey) {
      if (!value.is_object()) return Bad(file, "__metadata__ must be an object of strings");
      for (const auto& [meta_key, meta_value] : value.items()) {
        if (!meta_value.is_string()) {
          return Bad(file, "__metadata__ \"" + meta_key + "\" must be a string");
        }
        out.metadata[meta_key] = meta_value.get<std::string>();
      }
      continue;
    }
    TAAS_ASSIGN_OR_RETURN(TensorInfo info, ParseTensor(key, value, file));
    out.tensors.push_back(std::move(info));
  }
  // The spans, in order, must tile the data exactly: no gap, no overlap, nothing past the end.
  std::sort(out.tensors.begin(), out.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t next = 0;
  for (const TensorInfo& t : out.tensors) {
    if (t.begin != next) {
      return Bad(file, "tensor \"" + t.name + "\": data_offsets [" + std::to_string(t.begin) +
                           ", " + std::to_string(t.end) + "] " +
                           (t.begin < next ? "overlap" : "leave a gap after") +
                           " the tensor before it, which ends at " + std::to_string(next));
    }
    if (t.end > data_bytes) {
      return Bad(file, "tensor \"" + t.name + "\": data_offsets [" + std::to_string(t.begin) +
                           ", " + std::to_string(t.end) + "] overrun the " +
                           std::to_string(data_bytes) + " bytes of data");
    }
    next = t.end;
  }
  if (next != data_bytes) {
    return Bad(file, "the tensors cover " + std::to_string(next) + " of the " +
                         std::to_string(data_bytes) + " bytes of data");
  }
  return out;
}

absl::StatusOr<std::string> EncodeHeader(const std::vector<Float32Tensor>& tensors,
                                         const std::map<std::string, std::string>& metadata) {
  Json json = Json::object();
  std::uint64_t offset = 0;
  for (const Float32Tensor& t : tensors) {
    if (t.name == kMetadataKey || json.contains(t.name)) {
      return absl::InvalidArgumentError("safetensors: tensor name \"" + t.name +
                                        "\" is reserved or used twice");
    }
    const auto elements = Elements(t.shape);
    if (!elements) {
      return absl::InvalidArgumentError("safetensors: tensor \"" + t.name +
                                        "\" has a negative or overflowing shape");
    }
    const std::uint64_t end = offset + static_cast<std::uint64_t>(*elements) * sizeof(float);
    json[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  if (!metadata.empty()) json[kMetadataKey] = metadata;
  std::string text = json.dump();
  // Padded with spaces (JSON whitespace) so that the data starts 8-byte aligned, as the
  // reference writer does.
  text.append((kLengthBytes - text.size() % kLengthBytes) % kLengthBytes, ' ');
  const std::uint64_t length = text.size();
  std::string out(kLengthBytes, '\0');
  std::memcpy(out.data(), &length, kLengthBytes);
  return out + text;
}

absl::StatusOr<Float32File> ReadFloat32(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return absl::NotFoundError("cannot open " + path + ": " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open " + path);
  char first[kLengthBytes] = {};
  in.read(first, kLengthBytes);
  TAAS_ASSIGN_OR_RETURN(
      std::uint64_t length,
      HeaderLength(std::string_view(first, static_cast<std::size_t>(in.gcount())), size, path));
  std::string header(static_cast<std::size_t>(length), '\0');
  in.read(header.data(), static_cast<std::streamsize>(length));
  if (static_cast<std::uint64_t>(in.gcount()) != length) {
    return Bad(path, "shorter than its " + std::to_string(size) + " bytes");
  }
  Float32File out;
  TAAS_ASSIGN_OR_RETURN(out.header, ParseHeader(header, size - kLengthBytes - length, path));
  for (const TensorInfo& t : out.header.tensors) {
    if (t.dtype != "F32") {
      return absl::InvalidArgumentError(path + ": tensor \"" + t.name + "\" is " + t.dtype +
                                        ", taas reads F32 (float32) tensors: convert it before "
                                        "saving (PyTorch: tensor.float())");
    }
  }
  // The spans tile the data (checked above), so reading them in order reads it once, front to
  // back, and allocates exactly its size.
  for (const TensorInfo& t : out.header.tensors) {
    std::vector<float> values(static_cast<std::size_t>((t.end - t.begin) / sizeof(float)));
    in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(t.end - t.begin));
    if (static_cast<std::uint64_t>(in.gcount()) != t.end - t.begin) {
      return Bad(path, "tensor \"" + t.name + "\": the file ends inside its data");
    }
    out.values.push_back(std::move(values));
  }
  return out;
}

}  // namespace taas::safetensors
