#include "taas/checkpoint/safetensors.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace taas::safetensors {
namespace {

namespace fs = std::filesystem;

std::string Length(std::uint64_t n) {
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out;
}

// The error ParseHeader gives for `header` over `data_bytes` of data in file "m.safetensors".
std::string ParseError(const std::string& header, std::uint64_t data_bytes) {
  auto parsed = ParseHeader(header, data_bytes, "m.safetensors");
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status().code() == absl::StatusCode::kDataLoss);
  const std::string message(parsed.status().message());
  CHECK(message.rfind("m.safetensors: ", 0) == 0);  // every error names the file
  return message;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("a header's tensors come back in data order, with shapes, dtypes and metadata") {
  auto parsed = ParseHeader(
      R"({"b": {"dtype": "F32", "shape": [2], "data_offsets": [24, 32]},
          "a": {"dtype": "I64", "shape": [1, 3], "data_offsets": [0, 24]},
          "e": {"dtype": "F16", "shape": [0], "data_offsets": [32, 32]},
          "__metadata__": {"k": "v"}}   )",
      32, "m.safetensors");
  REQUIRE(parsed.ok());
  REQUIRE(parsed->tensors.size() == 3);
  CHECK(parsed->tensors[0].name == "a");
  CHECK(parsed->tensors[0].dtype == "I64");
  CHECK(parsed->tensors[0].shape == std::vector<std::int64_t>{1, 3});
  CHECK(parsed->tensors[1].name == "b");
  CHECK(parsed->tensors[2].name == "e");
  CHECK(parsed->metadata.at("k") == "v");
}

TEST_CASE("spans that overlap, overrun, leave gaps or do not match their shape are refused") {
  const auto tensor = [](const std::string& name, const std::string& dtype,
                         const std::string& shape, std::uint64_t begin, std::uint64_t end) {
    return "\"" + name + "\": {\"dtype\": \"" + dtype + "\", \"shape\": " + shape +
           ", \"data_offsets\": [" + std::to_string(begin) + ", " + std::to_string(end) + "]}";
  };
  struct Case {
    std::string header;
    std::uint64_t data_bytes;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"{" + tensor("a", "F32", "[2]", 0, 8) + ", " + tensor("b", "F32", "[2]", 4, 12) + "}", 12,
       "tensor \"b\": data_offsets [4, 12] overlap the tensor before it, which ends at 8"},
      {"{" + tensor("a", "F32", "[2]", 0, 8) + "}", 4,
       "tensor \"a\": data_offsets [0, 8] overrun the 4 bytes of data"},
      {"{" + tensor("a", "F32", "[1]", 4, 8) + "}", 8,
       "tensor \"a\": data_offsets [4, 8] leave a gap"},
      {"{" + tensor("a", "F32", "[1]", 0, 4) + "}", 8,
       "the tensors cover 4 of the 8 bytes of data"},
      {"{" + tensor("w", "F32", "[2, 3]", 0, 20) + "}", 20,
       "tensor \"w\": shape [2,3] of F32 does not fill its 20 bytes"},
      {"{" + tensor("w", "F32", "[4611686018427387904, 4]", 0, 16) + "}", 16,
       "tensor \"w\": shape"},
      {"{" + tensor("w", "F32", "[1]", 8, 4) + "}", 8, "data_offsets [8, 4] end before they begin"},
      {"{" + tensor("w", "Q4", "[1]", 0, 4) + "}", 4, "tensor \"w\": unknown dtype \"Q4\""},
      {"{" + tensor("w", "F32", "[-1]", 0, 4) + "}", 4, "shape must hold integers >= 0"},
      {"{" + tensor("w", "F32", "[1.5]", 0, 4) + "}", 4, "shape must hold integers >= 0"},
      {R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", 4,
       "tensor \"w\": data_offsets must be two integers >= 0"},
      {R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4,
       "data_offsets must be two integers"},
      {R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", 4, "dtype must be a string"},
      {R"({"w": 3})", 4, "tensor \"w\": must be an object"},
      {R"({"__metadata__": {"k": 1}})", 0, "__metadata__ \"k\" must be a string"},
      {R"([1, 2])", 0, "not a JSON object"},
      {"{\"w\": ", 0, "not a JSON object"},
  };
  for (const Case& c : cases) {
    const std::string header = c.header;
    CAPTURE(header);
    CHECK(Has(ParseError(c.header, c.data_bytes), c.error));
  }
}

TEST_CASE("the header length is checked against the file and the cap before anything is read") {
  CHECK(HeaderLength(Length(16), 24, "f").value() == 16);
  CHECK(Has(std::string(HeaderLength(Length(17), 24, "f").status().message()),
            "f: header length 17 overruns the file's 24 bytes"));
  CHECK(Has(
      std::string(HeaderLength(Length(std::uint64_t{1} << 63), 1 << 30, "f").status().message()),
      "more than the 67108864"));
  CHECK(Has(std::string(HeaderLength("abc", 3, "f").status().message()), "too short"));
}

struct TempFile {
  fs::path path;
  TempFile() {
    std::string tmpl = (fs::temp_directory_path() / "taas-st-XXXXXX").string();
    const int fd = ::mkstemp(tmpl.data());
    ::close(fd);
    path = tmpl;
  }
  ~TempFile() { fs::remove(path); }
};

TEST_CASE("encoded tensors read back bit for bit, and a tensor of another dtype is named") {
  const std::vector<float> w = {1.5f, -0.0f, 3e-38f, 7.0f, -2.25f, 1e30f};
  const std::vector<float> empty;
  auto header = EncodeHeader({{"layer/w", {2, 3}, w.data()}, {"e", {0}, empty.data()}},
                             {{"global_step", "5"}});
  REQUIRE(header.ok());
  CHECK(header->size() % 8 == 0);
  TempFile file;
  {
    std::ofstream out(file.path, std::ios::binary);
    out << *header;
    out.write(reinterpret_cast<const char*>(w.data()), 24);
  }
  auto read = ReadFloat32(file.path.string());
  REQUIRE(read.ok());
  REQUIRE(read->header.tensors.size() == 2);
  CHECK(read->header.tensors[0].name == "layer/w");
  CHECK(read->header.tensors[0].shape == std::vector<std::int64_t>{2, 3});
  CHECK(std::memcmp(read->values[0].data(), w.data(), 24) == 0);
  CHECK(read->values[1].empty());
  CHECK(read->header.metadata.at("global_step") == "5");

  CHECK_FALSE(EncodeHeader({{"a", {1}, w.data()}, {"a", {1}, w.data()}}, {}).ok());
  CHECK_FALSE(EncodeHeader({{"__metadata__", {1}, w.data()}}, {}).ok());

  const std::string json = R"({"d": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}})";
  {
    std::ofstream out(file.path, std::ios::binary | std::ios::trunc);
    out << Length(json.size()) << json << std::string(8, '\0');
  }
  auto f64 = ReadFloat32(file.path.string());
  REQUIRE_FALSE(f64.ok());
  CHECK(f64.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Has(std::string(f64.status().message()),
            file.path.string() + ": tensor \"d\" is F64, taas reads F32"));
  fs::resize_file(file.path, 8 + json.size() + 4);  // a truncated file: its data is short
  CHECK(Has(std::string(ReadFloat32(file.path.string()).status().message()),
            "overrun the 4 bytes of data"));
  CHECK(ReadFloat32((file.path.string() + ".missing")).status().code() ==
        absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace taas::safetensors
