#include "taas/data/numpy.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "hex.h"
#include "mapped_file.h"
#include "taas/data/file_patterns.h"
#include "zip_archive.h"

namespace taas::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;
constexpr std::size_t kVersion1PreambleBytes = 10;  // the magic, the version, a 16-bit length
constexpr std::size_t kHeaderAlignment = 64;        // numpy.save pads its headers to it
constexpr std::size_t kShownNames = 20;             // members listed in an error
// The most bytes of one example's row: a record's sizes travel as 32 bits.
constexpr std::uint64_t kMaxRowBytes = std::uint64_t{1} << 31;
// A record: features' dtype | labels' dtype | uint32 features' bytes | features | labels.
constexpr std::size_t kRecordPrefixBytes = 6;

struct DtypeInfo {
  NpyDtype dtype;
  std::string_view descr;
  std::size_t bytes;
  bool integer;
};

constexpr DtypeInfo kDtypes[] = {
    {NpyDtype::kFloat32, "<f4", 4, false}, {NpyDtype::kFloat64, "<f8", 8, false},
    {NpyDtype::kInt8, "|i1", 1, true},     {NpyDtype::kInt16, "<i2", 2, true},
    {NpyDtype::kInt32, "<i4", 4, true},    {NpyDtype::kInt64, "<i8", 8, true},
    {NpyDtype::kUint8, "|u1", 1, true},
};

const DtypeInfo& Info(NpyDtype dtype) { return kDtypes[static_cast<std::size_t>(dtype)]; }

std::string Supported() {
  std::string out;
  for (const DtypeInfo& info : kDtypes) out += (out.empty() ? "" : ", ") + std::string(info.descr);
  return out;
}

absl::StatusOr<NpyDtype> ParseDescr(std::string_view descr) {
  for (const DtypeInfo& info : kDtypes) {
    // A one-byte type has no byte order: numpy writes '|', and '<' means the same.
    if (descr == info.descr || (info.bytes == 1 && descr.size() == 3 && descr[0] == '<' &&
                                descr.substr(1) == info.descr.substr(1))) {
      return info.dtype;
    }
  }
  if (!descr.empty() && descr[0] == '>') {
    return absl::DataLossError("dtype '" + std::string(descr) +
                               "' is big-endian: save the array as little-endian "
                               "(a.astype(a.dtype.newbyteorder('<')))");
  }
  if (descr.find('O') != std::string_view::npos) {
    return absl::DataLossError("dtype '" + std::string(descr) +
                               "' holds Python objects (pickles), which are never read");
  }
  return absl::DataLossError("dtype '" + std::string(descr) + "' is not supported (supported: " +
                             Supported() + "): convert with a.astype('<f4')");
}

std::string ShapeText(const std::vector<std::int64_t>& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  }
  return out + (shape.size() == 1 ? ",)" : ")");
}

// The header's dict, a Python literal, parsed strictly: exactly the three keys numpy writes.
class DictParser {
 public:
  explicit DictParser(std::string_view text) : text_(text) {}

  absl::Status Parse(NpyHeader& header) {
    bool seen_descr = false, seen_order = false, seen_shape = false;
    SkipSpaces();
    if (!Take('{')) return Error("the header is not a dict (it does not start with '{')");
    for (;;) {
      SkipSpaces();
      if (Take('}')) break;
      TAAS_ASSIGN_OR_RETURN(const std::string key, String());
      SkipSpaces();
      if (!Take(':')) return Error("no ':' after the key '" + key + "'");
      SkipSpaces();
      bool* seen = key == "descr"           ? &seen_descr
                   : key == "fortran_order" ? &seen_order
                   : key == "shape"         ? &seen_shape
                                            : nullptr;
      if (seen == nullptr) return Error("an unknown key '" + key + "'");
      if (*seen) return Error("the key '" + key + "' twice");
      *seen = true;
      if (key == "descr") {
        if (Peek() == '[') return Error("a structured dtype (a list of fields), which is not read");
        TAAS_ASSIGN_OR_RETURN(const std::string descr, String());
        TAAS_ASSIGN_OR_RETURN(header.dtype, ParseDescr(descr));
      } else if (key == "fortran_order") {
        TAAS_ASSIGN_OR_RETURN(const bool fortran, Bool());
        if (fortran) {
          return absl::DataLossError(
              "the array is in Fortran order: save it in C order (np.ascontiguousarray(a))");
        }
      } else {
        TAAS_ASSIGN_OR_RETURN(header.shape, Shape());
      }
      SkipSpaces();
      if (Take(',')) continue;
      SkipSpaces();
      if (Take('}')) break;
      return Error("no ',' or '}' after the value of '" + key + "'");
    }
    if (!seen_descr || !seen_order || !seen_shape) {
      return Error("the keys 'descr', 'fortran_order' and 'shape' must all be there");
    }
    // numpy pads the dict with spaces and ends it with a line break.
    if (text_.size() <= pos_ || text_.back() != '\n' ||
        text_.substr(pos_, text_.size() - pos_ - 1).find_first_not_of(' ') !=
            std::string_view::npos) {
      return Error("text after the dict other than spaces and a final line break");
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Error(const std::string& what) const {
    return absl::DataLossError("a malformed header at character " + std::to_string(pos_) +
                               " of its dict: " + what);
  }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Take(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  void SkipSpaces() {
    while (Peek() == ' ') ++pos_;
  }

  absl::StatusOr<std::string> String() {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("a string was expected");
    const std::size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) return Error("a string that does not end");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    if (value.find('\\') != std::string::npos) return Error("an escape in a string");
    pos_ = end + 1;
    return value;
  }

  absl::StatusOr<bool> Bool() {
    for (const auto& [word, value] :
         {std::pair<std::string_view, bool>{"True", true}, {"False", false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    return Error("'fortran_order' must be True or False");
  }

  absl::StatusOr<std::vector<std::int64_t>> Shape() {
    if (!Take('(')) return Error("'shape' must be a tuple");
    std::vector<std::int64_t> shape;
    bool comma = false;  // the last dimension was followed by a comma
    for (;;) {
      SkipSpaces();
      if (Take(')')) break;
      if (!shape.empty() && !comma) return Error("no ',' between the shape's dimensions");
      std::int64_t dimension = 0;
      std::size_t digits = 0;
      while (Peek() >= '0' && Peek() <= '9') {
        if (dimension > (std::numeric_limits<std::int64_t>::max() - 9) / 10) {
          return Error("a dimension over 2^63");
        }
        dimension = dimension * 10 + (Peek() - '0');
        ++pos_;
        ++digits;
      }
      if (digits == 0) return Error("a dimension that is not a non-negative integer");
      shape.push_back(dimension);
      SkipSpaces();
      comma = Take(',');
    }
    // (3) is a number in Python, not a tuple: numpy writes (3,).
    if (shape.size() == 1 && !comma) return Error("a one-dimensional shape without its comma");
    return shape;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

template <typename T>
T Load(const char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));  // little-endian hosts only, as the format is
  return value;
}

// `count` values of `dtype` at `in` as floats times `scale`.
void ToFloats(NpyDtype dtype, const char* in, std::size_t count, float scale, float* out) {
  const auto convert = [&]<typename T>(T) {
    for (std::size_t i = 0; i < count; ++i) {
      out[i] = static_cast<float>(Load<T>(in + i * sizeof(T))) * scale;
    }
  };
  switch (dtype) {
    case NpyDtype::kFloat32:
      return convert(float{});
    case NpyDtype::kFloat64:
      return convert(double{});
    case NpyDtype::kInt8:
      return convert(std::int8_t{});
    case NpyDtype::kInt16:
      return convert(std::int16_t{});
    case NpyDtype::kInt32:
      return convert(std::int32_t{});
    case NpyDtype::kInt64:
      return convert(std::int64_t{});
    case NpyDtype::kUint8:
      return convert(std::uint8_t{});
  }
}

std::int64_t ToInteger(NpyDtype dtype, const char* in) {
  switch (dtype) {
    case NpyDtype::kInt8:
      return Load<std::int8_t>(in);
    case NpyDtype::kInt16:
      return Load<std::int16_t>(in);
    case NpyDtype::kInt32:
      return Load<std::int32_t>(in);
    case NpyDtype::kInt64:
      return Load<std::int64_t>(in);
    case NpyDtype::kUint8:
      return Load<std::uint8_t>(in);
    default:
      return -1;  // not an integer type: the caller checked
  }
}

// The bytes of one array's .npy image, read in order.
class ArrayBytes {
 public:
  virtual ~ArrayBytes() = default;
  // Exactly `size` bytes into `out`, or DataLoss.
  virtual absl::Status Read(char* out, std::size_t size) = 0;
};

// An .npy file or a stored member: copies from the mapping.
class MappedBytes : public ArrayBytes {
 public:
  explicit MappedBytes(std::string_view bytes) : bytes_(bytes) {}
  absl::Status Read(char* out, std::size_t size) override {
    if (size > bytes_.size()) {
      return absl::DataLossError("cut short: " + std::to_string(size) + " bytes wanted, " +
                                 std::to_string(bytes_.size()) + " left");
    }
    if (size == 0) return absl::OkStatus();  // an empty file maps to no address at all
    std::memcpy(out, bytes_.data(), size);
    bytes_.remove_prefix(size);
    return absl::OkStatus();
  }

 private:
  std::string_view bytes_;
};

// A deflated member, inflated from the mapping as it is read: never whole, and never more than
// is asked for, whatever the archive claims.
class InflatedBytes : public ArrayBytes {
 public:
  explicit InflatedBytes(std::string_view compressed) : compressed_(compressed) {}
  ~InflatedBytes() override {
    if (started_) inflateEnd(&stream_);
  }

  absl::Status Start() {
    if (inflateInit2(&stream_, -MAX_WBITS) != Z_OK) {  // raw deflate, as zip stores it
      return absl::InternalError("zlib: inflateInit2 failed");
    }
    started_ = true;
    return absl::OkStatus();
  }

  absl::Status Read(char* out, std::size_t size) override {
    while (size > 0) {
      if (stream_.avail_in == 0 && !compressed_.empty()) {
        const std::size_t piece = std::min<std::size_t>(compressed_.size(), UINT_MAX);
        stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed_.data()));
        stream_.avail_in = static_cast<uInt>(piece);
        compressed_.remove_prefix(piece);
      }
      const std::size_t piece = std::min<std::size_t>(size, UINT_MAX);
      stream_.next_out = reinterpret_cast<Bytef*>(out);
      stream_.avail_out = static_cast<uInt>(piece);
      const int code = inflate(&stream_, Z_NO_FLUSH);
      const std::size_t produced = piece - stream_.avail_out;
      out += produced;
      size -= produced;
      if (size == 0) break;
      if (code == Z_STREAM_END || (code == Z_BUF_ERROR && stream_.avail_in == 0)) {
        return absl::DataLossError("the deflated data ends " + std::to_string(size) +
                                   " bytes short of what the header declares: cut short");
      }
      if (code != Z_OK) {
        return absl::DataLossError(std::string("corrupt deflated data: ") +
                                   (stream_.msg != nullptr ? stream_.msg : "zlib error"));
      }
    }
    return absl::OkStatus();
  }

 private:
  std::string_view compressed_;  // not yet given to zlib
  z_stream stream_{};
  bool started_ = false;
};

// A member's bytes, checked against the CRC-32 the archive's directory records for them once the
// last one is read: a corrupt stored member would otherwise read as data (a deflated one mostly
// fails to inflate, but not always). A member read only in part is not checked.
class CrcCheckedBytes : public ArrayBytes {
 public:
  CrcCheckedBytes(std::unique_ptr<ArrayBytes> bytes, std::uint64_t size, std::uint32_t expected)
      : bytes_(std::move(bytes)), left_(size), expected_(expected) {}

  absl::Status Read(char* out, std::size_t size) override {
    if (size > left_) {
      return absl::DataLossError("cut short: " + std::to_string(size) + " bytes wanted, " +
                                 std::to_string(left_) + " left of what the directory declares");
    }
    TAAS_RETURN_IF_ERROR(bytes_->Read(out, size));
    crc_ = crc32_z(crc_, reinterpret_cast<const Bytef*>(out), size);
    left_ -= size;
    if (left_ == 0 && !checked_) {
      checked_ = true;
      if (crc_ != expected_) {
        return absl::DataLossError(
            "the data's CRC-32 is " + internal::Hex32(static_cast<std::uint32_t>(crc_)) +
            ", the archive's directory records " + internal::Hex32(expected_) +
            ": the member is corrupt (write the archive again)");
      }
    }
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<ArrayBytes> bytes_;
  std::uint64_t left_;
  const std::uint32_t expected_;
  uLong crc_ = crc32_z(0, nullptr, 0);
  bool checked_ = false;
};

// One array, open, its header read: what is left to read is its data.
struct OpenArray {
  std::string name;  // "<path>" or "<path>:<member>", for errors
  std::unique_ptr<internal::MappedFile> file;
  std::unique_ptr<ArrayBytes> bytes;
  NpyHeader header;
};

std::string ArrayName(const NumpyArray& array) {
  return array.member.empty() ? array.path : array.path + ":" + array.member;
}

absl::Status Named(const std::string& name, const absl::Status& status) {
  return absl::Status(status.code(), name + ": " + std::string(status.message()));
}

absl::StatusOr<OpenArray> Open(const NumpyArray& array, const NumpySpec& spec) {
  OpenArray open;
  open.name = ArrayName(array);
  TAAS_ASSIGN_OR_RETURN(open.file, internal::MappedFile::Open(array.path));
  const std::string_view file = open.file->bytes();
  std::uint64_t image_bytes = file.size();  // of the .npy image: the file, or the member
  if (array.member.empty()) {
    open.bytes = std::make_unique<MappedBytes>(file);
  } else {
    absl::StatusOr<std::vector<internal::ZipMember>> members = internal::ListZipMembers(file);
    if (!members.ok()) return Named(array.path, members.status());
    const std::string wanted = array.member + ".npy";
    auto found = std::find_if(members->begin(), members->end(),
                              [&](const internal::ZipMember& m) { return m.name == wanted; });
    if (found == members->end()) {
      std::string names;
      for (std::size_t i = 0; i < members->size() && i < kShownNames; ++i) {
        names += (i == 0 ? "" : ", ") + (*members)[i].name;
      }
      return absl::NotFoundError(array.path + ": the archive has no array \"" + array.member +
                                 "\" (member " + wanted + "; it has: " + names + ")");
    }
    const std::string_view data = file.substr(static_cast<std::size_t>(found->data_offset),
                                              static_cast<std::size_t>(found->compressed_bytes));
    std::unique_ptr<ArrayBytes> bytes;
    if (found->method == internal::ZipMethod::kStored) {
      bytes = std::make_unique<MappedBytes>(data);
    } else {
      auto inflated = std::make_unique<InflatedBytes>(data);
      TAAS_RETURN_IF_ERROR(inflated->Start());
      bytes = std::move(inflated);
    }
    image_bytes = found->uncompressed_bytes;
    open.bytes = std::make_unique<CrcCheckedBytes>(std::move(bytes), image_bytes, found->crc32);
  }
  std::string header(std::min<std::uint64_t>(kNpyPreambleBytes, image_bytes), '\0');
  if (absl::Status s = open.bytes->Read(header.data(), header.size()); !s.ok()) {
    return Named(open.name, s);
  }
  absl::StatusOr<std::uint64_t> header_bytes = NpyHeaderBytes(header, spec.max_header_bytes);
  if (!header_bytes.ok()) return Named(open.name, header_bytes.status());
  if (*header_bytes > image_bytes) {
    return absl::DataLossError(open.name + ": the header declares " +
                               std::to_string(*header_bytes) + " bytes of header, the file holds " +
                               std::to_string(image_bytes) + ": cut short");
  }
  const std::size_t read = header.size();
  header.resize(static_cast<std::size_t>(*header_bytes));
  if (absl::Status s = open.bytes->Read(header.data() + read, header.size() - read); !s.ok()) {
    return Named(open.name, s);
  }
  absl::StatusOr<NpyHeader> parsed = ParseNpyHeader(header, image_bytes);
  if (!parsed.ok()) return Named(open.name, parsed.status());
  open.header = *std::move(parsed);
  return open;
}

std::int64_t Product(const std::vector<std::int64_t>& shape, std::size_t from) {
  std::int64_t product = 1;
  for (std::size_t i = from; i < shape.size(); ++i)
    product *= shape[i];  // ParseNpyHeader bounded it
  return product;
}

absl::StatusOr<NumpyShapes> CheckPart(const OpenArray& features, const OpenArray& labels,
                                      const NumpySpec& spec) {
  const NpyHeader& x = features.header;
  const NpyHeader& y = labels.header;
  if (x.shape.empty() || y.shape.empty()) {
    return absl::DataLossError((x.shape.empty() ? features.name : labels.name) +
                               ": a scalar (shape ()), not an array of examples");
  }
  if (x.shape[0] != y.shape[0]) {
    return absl::DataLossError(features.name + " holds " + std::to_string(x.shape[0]) +
                               " examples (shape " + ShapeText(x.shape) + "), " + labels.name +
                               " " + std::to_string(y.shape[0]) + " labels (shape " +
                               ShapeText(y.shape) + "): the first axes must agree");
  }
  NumpyShapes shapes;
  shapes.examples = x.shape[0];
  shapes.example_shape.assign(x.shape.begin() + 1, x.shape.end());
  if (shapes.example_shape.empty()) shapes.example_shape = {1};
  if (Product(x.shape, 1) == 0) {
    return absl::DataLossError(features.name + ": shape " + ShapeText(x.shape) +
                               " holds no values per example");
  }
  if (spec.label_kind == LabelKind::kClass) {
    if (!Info(y.dtype).integer || Product(y.shape, 1) != 1 || y.shape.size() > 2) {
      return absl::DataLossError(
          labels.name + ": classes must be one integer per example, shape (" +
          std::to_string(y.shape[0]) + ",), got " + std::string(NpyDescr(y.dtype)) + " of shape " +
          ShapeText(y.shape) + " (for float targets set NumpySpec::label_kind to kFloatTarget)");
    }
  } else {
    shapes.target_elements = Product(y.shape, 1);
    if (shapes.target_elements == 0) {
      return absl::DataLossError(labels.name + ": shape " + ShapeText(y.shape) +
                                 " holds no target values per example");
    }
  }
  const std::uint64_t row_bytes =
      static_cast<std::uint64_t>(Product(x.shape, 1)) * NpyItemBytes(x.dtype) +
      static_cast<std::uint64_t>(Product(y.shape, 1)) * NpyItemBytes(y.dtype);
  if (row_bytes > kMaxRowBytes) {
    return absl::DataLossError(features.name + ": one example and its label hold " +
                               std::to_string(row_bytes) + " bytes, more than the " +
                               std::to_string(kMaxRowBytes) + " a record may");
  }
  return shapes;
}

class NumpyReader : public RecordReader {
 public:
  NumpyReader(OpenArray features, OpenArray labels, std::int64_t examples)
      : features_(std::move(features)),
        labels_(std::move(labels)),
        examples_(examples),
        feature_bytes_(static_cast<std::size_t>(Product(features_.header.shape, 1)) *
                       NpyItemBytes(features_.header.dtype)),
        label_bytes_(static_cast<std::size_t>(Product(labels_.header.shape, 1)) *
                     NpyItemBytes(labels_.header.dtype)) {}

  absl::StatusOr<bool> Next(Record& record) override {
    if (index_ >= examples_) return false;
    record.bytes.resize(kRecordPrefixBytes + feature_bytes_ + label_bytes_);
    char* out = record.bytes.data();
    out[0] = static_cast<char>(features_.header.dtype);
    out[1] = static_cast<char>(labels_.header.dtype);
    const auto feature_bytes = static_cast<std::uint32_t>(feature_bytes_);
    std::memcpy(out + 2, &feature_bytes, sizeof(feature_bytes));
    if (absl::Status s = features_.bytes->Read(out + kRecordPrefixBytes, feature_bytes_); !s.ok()) {
      return Where(features_, s);
    }
    if (absl::Status s =
            labels_.bytes->Read(out + kRecordPrefixBytes + feature_bytes_, label_bytes_);
        !s.ok()) {
      return Where(labels_, s);
    }
    record.index = index_;
    record.offset =
        features_.header.header_bytes + static_cast<std::uint64_t>(index_) * feature_bytes_;
    ++index_;
    return true;
  }

 private:
  absl::Status Where(const OpenArray& array, const absl::Status& status) {
    const std::int64_t failed = index_;
    index_ = examples_;  // done
    return absl::Status(status.code(), array.name + ": example " + std::to_string(failed) + ": " +
                                           std::string(status.message()));
  }

  OpenArray features_;
  OpenArray labels_;
  const std::int64_t examples_;
  const std::size_t feature_bytes_;
  const std::size_t label_bytes_;
  std::int64_t index_ = 0;
};

class NumpyDecoder {
 public:
  explicit NumpyDecoder(NumpySpec spec) : spec_(std::move(spec)) {}

  absl::StatusOr<DecodedExample> operator()(std::string_view record) const {
    const auto refuse = [] {
      return absl::DataLossError(
          "not a NumPy record (a NumpyDataset's): decode a NumpyDataset's records with "
          "MakeNumpyDecoder");
    };
    if (record.size() < kRecordPrefixBytes) return refuse();
    const auto x = static_cast<std::uint8_t>(record[0]);
    const auto y = static_cast<std::uint8_t>(record[1]);
    if (x >= std::size(kDtypes) || y >= std::size(kDtypes)) return refuse();
    const NpyDtype x_dtype = kDtypes[x].dtype;
    const NpyDtype y_dtype = kDtypes[y].dtype;
    const auto feature_bytes = Load<std::uint32_t>(record.data() + 2);
    record.remove_prefix(kRecordPrefixBytes);
    if (feature_bytes > record.size() || feature_bytes % kDtypes[x].bytes != 0 ||
        (record.size() - feature_bytes) % kDtypes[y].bytes != 0) {
      return refuse();
    }
    DecodedExample out;
    out.input.resize(feature_bytes / kDtypes[x].bytes);
    ToFloats(x_dtype, record.data(), out.input.size(), spec_.feature_scale, out.input.data());
    const std::string_view label = record.substr(feature_bytes);
    const std::size_t label_count = label.size() / kDtypes[y].bytes;
    if (spec_.label_kind == LabelKind::kFloatTarget) {
      out.target.resize(label_count);
      ToFloats(y_dtype, label.data(), label_count, 1.0f, out.target.data());
      return out;
    }
    if (!kDtypes[y].integer || label_count != 1) return refuse();
    const std::int64_t value = ToInteger(y_dtype, label.data());
    const std::int64_t limit =
        spec_.num_classes > 0 ? spec_.num_classes : std::numeric_limits<std::int32_t>::max();
    if (value < 0 || value >= limit) {
      return absl::DataLossError("class " + std::to_string(value) + " is not in [0, " +
                                 std::to_string(limit) + ")" +
                                 (spec_.num_classes > 0 ? " (NumpySpec::num_classes)" : ""));
    }
    out.label = static_cast<std::int32_t>(value);
    return out;
  }

 private:
  NumpySpec spec_;
};

absl::Status CheckSpec(const NumpySpec& spec) {
  if (spec.num_classes < 0) {
    return absl::InvalidArgumentError("numpy: num_classes must be >= 0, got " +
                                      std::to_string(spec.num_classes));
  }
  if (!std::isfinite(spec.feature_scale)) {
    return absl::InvalidArgumentError("numpy: feature_scale must be finite");
  }
  if (spec.max_header_bytes < kNpyPreambleBytes) {
    return absl::InvalidArgumentError("numpy: max_header_bytes must be >= " +
                                      std::to_string(kNpyPreambleBytes));
  }
  return absl::OkStatus();
}

}  // namespace

std::size_t NpyItemBytes(NpyDtype dtype) { return Info(dtype).bytes; }

std::string_view NpyDescr(NpyDtype dtype) { return Info(dtype).descr; }

absl::StatusOr<std::uint64_t> NpyHeaderBytes(std::string_view preamble,
                                             std::uint64_t max_header_bytes) {
  if (preamble.substr(0, kMagicBytes) != std::string_view(kMagic, kMagicBytes)) {
    return absl::DataLossError("not an .npy file: it does not start with \\x93NUMPY");
  }
  if (preamble.size() < kVersion1PreambleBytes) {
    return absl::DataLossError("cut short in its preamble (" + std::to_string(preamble.size()) +
                               " bytes)");
  }
  const auto major = static_cast<unsigned char>(preamble[6]);
  const auto minor = static_cast<unsigned char>(preamble[7]);
  std::uint64_t total = 0;
  if (major == 1 && minor == 0) {
    total = kVersion1PreambleBytes + Load<std::uint16_t>(preamble.data() + 8);
  } else if ((major == 2 || major == 3) && minor == 0) {
    if (preamble.size() < kNpyPreambleBytes) {
      return absl::DataLossError("cut short in its preamble (" + std::to_string(preamble.size()) +
                                 " bytes)");
    }
    total = kNpyPreambleBytes + std::uint64_t{Load<std::uint32_t>(preamble.data() + 8)};
  } else {
    return absl::DataLossError("format version " + std::to_string(major) + "." +
                               std::to_string(minor) + " is not one of 1.0, 2.0 and 3.0");
  }
  if (total > max_header_bytes) {
    return absl::DataLossError("the header declares " + std::to_string(total) +
                               " bytes, more than NumpySpec::max_header_bytes (" +
                               std::to_string(max_header_bytes) + ")");
  }
  return total;
}

absl::StatusOr<NpyHeader> ParseNpyHeader(std::string_view header, std::uint64_t file_bytes) {
  TAAS_ASSIGN_OR_RETURN(const std::uint64_t header_bytes,
                        NpyHeaderBytes(header.substr(0, kNpyPreambleBytes), header.size()));
  if (header_bytes != header.size()) {
    return absl::DataLossError("the header is " + std::to_string(header_bytes) + " bytes, got " +
                               std::to_string(header.size()));
  }
  const std::size_t dict_start = header[6] == 1 ? kVersion1PreambleBytes : kNpyPreambleBytes;
  NpyHeader parsed;
  parsed.header_bytes = header_bytes;
  TAAS_RETURN_IF_ERROR(DictParser(header.substr(dict_start)).Parse(parsed));
  // The data's bytes, checked for overflow before anything is sized by them.
  std::uint64_t bytes = NpyItemBytes(parsed.dtype);
  const std::uint64_t limit = std::numeric_limits<std::int64_t>::max();
  for (const std::int64_t dimension : parsed.shape) {
    const auto d = static_cast<std::uint64_t>(dimension);
    if (d != 0 && bytes > limit / d) {
      return absl::DataLossError("shape " + ShapeText(parsed.shape) + " of " +
                                 std::string(NpyDescr(parsed.dtype)) +
                                 " holds more than 2^63 bytes: the header lies");
    }
    bytes *= d;
  }
  // A zero dimension empties the array, however large the others.
  if (std::find(parsed.shape.begin(), parsed.shape.end(), 0) != parsed.shape.end()) bytes = 0;
  parsed.data_bytes = bytes;
  if (file_bytes < header_bytes || file_bytes - header_bytes != bytes) {
    const std::uint64_t held = file_bytes > header_bytes ? file_bytes - header_bytes : 0;
    return absl::DataLossError(
        "the header declares " + std::to_string(bytes) + " bytes of data (shape " +
        ShapeText(parsed.shape) + " of " + std::string(NpyDescr(parsed.dtype)) +
        "), the file holds " + std::to_string(held) +
        (held < bytes ? ": cut short, or a header that lies" : ": bytes after the array"));
  }
  return parsed;
}

std::string EncodeNpy(NpyDtype dtype, const std::vector<std::int64_t>& shape,
                      std::string_view data) {
  std::string dict = "{'descr': '" + std::string(NpyDescr(dtype)) +
                     "', 'fortran_order': False, 'shape': " + ShapeText(shape) + ", }";
  const std::size_t unpadded = kVersion1PreambleBytes + dict.size() + 1;
  dict.append((kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicBytes);
  out += '\x01';
  out += '\x00';
  const auto length = static_cast<std::uint16_t>(dict.size());
  out.append(reinterpret_cast<const char*>(&length), sizeof(length));
  out += dict;
  out.append(data);
  return out;
}

absl::StatusOr<std::vector<NumpyPart>> NpzParts(const std::vector<std::string>& patterns,
                                                const std::string& features_member,
                                                const std::string& labels_member) {
  if (features_member.empty() || labels_member.empty()) {
    return absl::InvalidArgumentError("numpy: name the .npz members of the features and labels");
  }
  TAAS_ASSIGN_OR_RETURN(const std::vector<std::string> files, MatchFiles(patterns));
  std::vector<NumpyPart> parts;
  for (const std::string& file : files) {
    parts.push_back({{file, features_member}, {file, labels_member}});
  }
  return parts;
}

absl::StatusOr<NumpyShapes> InspectNumpyPart(const NumpyPart& part, const NumpySpec& spec) {
  TAAS_RETURN_IF_ERROR(CheckSpec(spec));
  TAAS_ASSIGN_OR_RETURN(const OpenArray features, Open(part.features, spec));
  TAAS_ASSIGN_OR_RETURN(const OpenArray labels, Open(part.labels, spec));
  return CheckPart(features, labels, spec);
}

absl::StatusOr<std::shared_ptr<NumpyDataset>> NumpyDataset::Create(std::vector<NumpyPart> parts,
                                                                   const NumpySpec& spec) {
  TAAS_RETURN_IF_ERROR(CheckSpec(spec));
  if (parts.empty()) return absl::InvalidArgumentError("numpy: no parts");
  return std::shared_ptr<NumpyDataset>(new NumpyDataset(std::move(parts), spec));
}

NumpyDataset::NumpyDataset(std::vector<NumpyPart> parts, const NumpySpec& spec)
    : parts_(std::move(parts)), spec_(spec) {}

std::int64_t NumpyDataset::num_parts() const { return static_cast<std::int64_t>(parts_.size()); }

std::string NumpyDataset::part_name(std::int64_t part) const {
  if (part < 0 || part >= num_parts()) return "NumPy part " + std::to_string(part);
  const NumpyPart& p = parts_[static_cast<std::size_t>(part)];
  return ArrayName(p.features) + " and " + ArrayName(p.labels);
}

absl::StatusOr<std::unique_ptr<RecordReader>> NumpyDataset::Open(std::int64_t part) const {
  if (part < 0 || part >= num_parts()) {
    return absl::OutOfRangeError("NumPy arrays: part " + std::to_string(part) + " is not in [0, " +
                                 std::to_string(num_parts()) + ")");
  }
  const NumpyPart& p = parts_[static_cast<std::size_t>(part)];
  TAAS_ASSIGN_OR_RETURN(OpenArray features, data::Open(p.features, spec_));
  TAAS_ASSIGN_OR_RETURN(OpenArray labels, data::Open(p.labels, spec_));
  TAAS_ASSIGN_OR_RETURN(const NumpyShapes shapes, CheckPart(features, labels, spec_));
  return std::unique_ptr<RecordReader>(
      new NumpyReader(std::move(features), std::move(labels), shapes.examples));
}

absl::StatusOr<DecodeFn> MakeNumpyDecoder(NumpySpec spec) {
  TAAS_RETURN_IF_ERROR(CheckSpec(spec));
  return DecodeFn(NumpyDecoder(std::move(spec)));
}

}  // namespace taas::data
