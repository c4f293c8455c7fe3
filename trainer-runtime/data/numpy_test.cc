#include "taas/data/numpy.h"

#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "taas/data/stream_pipeline.h"
#include "test_files.h"
#include "test_read.h"
#include "zip_archive.h"

namespace taas::data {
namespace {

using testing::Contains;
using testing::TempDir;
using testing::WriteRaw;

const std::string kFixtures = std::string(TAAS_DATA_TESTDATA) + "/numpy";

std::string Fixture(const std::string& name) { return kFixtures + "/" + name; }

std::string ReadFile(const std::string& path) {
  const std::vector<char> bytes = testing::ReadRaw(path);
  return std::string(bytes.begin(), bytes.end());
}

// Every example of the parts, in order, or the first error (named by its part).
absl::StatusOr<std::vector<DecodedExample>> ReadExamples(const std::vector<NumpyPart>& parts,
                                                         const NumpySpec& spec) {
  TAAS_ASSIGN_OR_RETURN(auto dataset, NumpyDataset::Create(parts, spec));
  TAAS_ASSIGN_OR_RETURN(DecodeFn decode, MakeNumpyDecoder(spec));
  return testing::ReadAllExamples(*dataset, decode);
}

const std::vector<std::int32_t> kClasses = {0, 1, 2, 0, 1};  // y.npy

TEST_CASE("files written by numpy.save read back exactly: every dtype, versions 1, 2 and 3") {
  // The formulas testdata/make_numpy_fixture.py states, with base[i][j] = 6 i + j.
  const std::vector<std::pair<std::string, float (*)(int)>> files = {
      {"x_i1.npy", [](int b) { return b - 7.0f; }},
      {"x_i2.npy", [](int b) { return b - 7.0f; }},
      {"x_i4.npy", [](int b) { return b - 7.0f; }},
      {"x_i8.npy", [](int b) { return b - 7.0f; }},
      {"x_u1.npy", [](int b) { return b * 8.0f; }},
      {"x_f4.npy", [](int b) { return b * 0.25f - 3; }},
      {"x_f8.npy", [](int b) { return b * 0.25f - 3; }},
      {"x_f4_v2.npy", [](int b) { return b * 0.25f - 3; }},
      {"x_f4_v3.npy", [](int b) { return b * 0.25f - 3; }},
  };
  for (const auto& [name, value] : files) {
    const std::string file = name;  // (clang 14 refuses to capture a structured binding)
    CAPTURE(file);
    const NumpyPart part{{Fixture(name), ""}, {Fixture("y.npy"), ""}};
    NumpySpec spec;
    spec.num_classes = 3;
    auto shapes = InspectNumpyPart(part, spec);
    REQUIRE_MESSAGE(shapes.ok(), shapes.status().message());
    CHECK(shapes->examples == 5);
    CHECK(shapes->example_shape == Shape{6});
    CHECK(shapes->target_elements == 0);
    auto examples = ReadExamples({part}, spec);
    REQUIRE_MESSAGE(examples.ok(), examples.status().message());
    REQUIRE(examples->size() == 5);
    for (int i = 0; i < 5; ++i) {
      std::vector<float> expected;
      for (int j = 0; j < 6; ++j) expected.push_back(value(6 * i + j));
      CHECK((*examples)[static_cast<std::size_t>(i)].input == expected);
      CHECK((*examples)[static_cast<std::size_t>(i)].label ==
            kClasses[static_cast<std::size_t>(i)]);
    }
  }
  // feature_scale multiplies every feature (1/255 for pixels).
  NumpySpec scaled;
  scaled.feature_scale = 0.5f;
  auto halves = ReadExamples({{{Fixture("x_u1.npy"), ""}, {Fixture("y.npy"), ""}}}, scaled);
  REQUIRE(halves.ok());
  CHECK((*halves)[1].input[0] == 24.0f);
}

TEST_CASE("EncodeNpy writes numpy.save's bytes, and ParseNpyHeader reads them") {
  const std::string file = ReadFile(Fixture("x_f4.npy"));
  auto header_bytes = NpyHeaderBytes(file.substr(0, kNpyPreambleBytes), 1 << 16);
  REQUIRE(header_bytes.ok());
  CHECK(*header_bytes == 128);
  auto header = ParseNpyHeader(file.substr(0, *header_bytes), file.size());
  REQUIRE_MESSAGE(header.ok(), header.status().message());
  CHECK(header->dtype == NpyDtype::kFloat32);
  CHECK(header->shape == std::vector<std::int64_t>{5, 6});
  CHECK(header->data_bytes == 120);
  CHECK(EncodeNpy(NpyDtype::kFloat32, {5, 6}, file.substr(128)) == file);
  for (const std::vector<std::int64_t>& shape :
       {std::vector<std::int64_t>{}, {0}, {3}, {2, 0, 4}, {1, 1, 1, 1}}) {
    std::int64_t count = 1;
    for (std::int64_t d : shape) count *= d;
    const std::string npy = EncodeNpy(NpyDtype::kInt16, shape, std::string(count * 2, 'x'));
    auto again = ParseNpyHeader(npy.substr(0, *NpyHeaderBytes(npy, 1 << 16)), npy.size());
    REQUIRE_MESSAGE(again.ok(), again.status().message());
    CHECK(again->shape == shape);
    CHECK(again->header_bytes % 64 == 0);
  }
}

TEST_CASE(".npz archives, stored and deflated: features, classes and float targets") {
  for (const std::string name : {"data.npz", "data_deflated.npz"}) {
    CAPTURE(name);
    auto members = internal::ListZipMembers(ReadFile(Fixture(name)));
    REQUIRE_MESSAGE(members.ok(), members.status().message());
    std::set<std::string> names;
    for (const auto& member : *members) names.insert(member.name);
    CHECK(names == std::set<std::string>{"x.npy", "y.npy", "t.npy"});
    CHECK((*members)[0].method ==
          (name == "data.npz" ? internal::ZipMethod::kStored : internal::ZipMethod::kDeflated));
    auto parts = NpzParts({Fixture(name)}, "x", "y");
    REQUIRE(parts.ok());
    NumpySpec spec;
    spec.num_classes = 3;
    auto shapes = InspectNumpyPart((*parts)[0], spec);
    REQUIRE_MESSAGE(shapes.ok(), shapes.status().message());
    CHECK(shapes->example_shape == Shape{2, 3});
    auto examples = ReadExamples(*parts, spec);
    REQUIRE_MESSAGE(examples.ok(), examples.status().message());
    REQUIRE(examples->size() == 5);
    for (int i = 0; i < 5; ++i) {
      CHECK((*examples)[static_cast<std::size_t>(i)].input[5] == (6 * i + 5) * 0.25f - 3);
      CHECK((*examples)[static_cast<std::size_t>(i)].label ==
            kClasses[static_cast<std::size_t>(i)]);
    }
    // t = base[:, :2] * 1.5 as float64: two float targets an example.
    NumpySpec regression;
    regression.label_kind = LabelKind::kFloatTarget;
    const NumpyPart targets{{Fixture(name), "x"}, {Fixture(name), "t"}};
    CHECK(InspectNumpyPart(targets, regression)->target_elements == 2);
    auto read = ReadExamples({targets}, regression);
    REQUIRE_MESSAGE(read.ok(), read.status().message());
    CHECK((*read)[3].target == std::vector<float>{18 * 1.5f, 19 * 1.5f});
    CHECK(Contains(InspectNumpyPart({{Fixture(name), "x"}, {Fixture(name), "t"}}, spec).status(),
                   "classes must be one integer per example"));
    CHECK(Contains(InspectNumpyPart({{Fixture(name), "x"}, {Fixture(name), "z"}}, spec).status(),
                   Fixture(name) + ": the archive has no array \"z\""));
  }
}

// An .npy file's bytes with `dict` as its header (padded as numpy pads it).
std::string WithDict(std::string dict, std::string_view data, char major = 1) {
  dict += '\n';
  std::string out = std::string("\x93NUMPY", 6) + major + '\0';
  if (major == 1) {
    const auto length = static_cast<std::uint16_t>(dict.size());
    out.append(reinterpret_cast<const char*>(&length), 2);
  } else {
    const auto length = static_cast<std::uint32_t>(dict.size());
    out.append(reinterpret_cast<const char*>(&length), 4);
  }
  return out + dict + std::string(data);
}

// The error reading `bytes` as an .npy file of features (y.npy's 5 classes beside it).
absl::Status ErrorOf(const std::string& bytes, const NumpySpec& spec = {}) {
  TempDir dir;
  WriteRaw(dir.File("x.npy"), bytes);
  auto shapes = InspectNumpyPart({{dir.File("x.npy"), ""}, {Fixture("y.npy"), ""}}, spec);
  REQUIRE_FALSE(shapes.ok());
  CHECK(Contains(shapes.status(), dir.File("x.npy") + ": "));
  return shapes.status();
}

TEST_CASE("hostile .npy headers: each error names the file and what is wrong") {
  const std::string rows(5 * 4, '\0');  // 5 int32s
  const auto dict = [](const std::string& shape) {
    return "{'descr': '<i4', 'fortran_order': False, 'shape': " + shape + ", }";
  };
  CHECK(Contains(ErrorOf(ReadFile(Fixture("fortran.npy"))), "Fortran order"));
  CHECK(Contains(ErrorOf(ReadFile(Fixture("big_endian.npy"))), "'>f4' is big-endian"));
  CHECK(Contains(ErrorOf("PK\3\4 not numpy"), "not an .npy file"));
  CHECK(Contains(ErrorOf(std::string("\x93NUMPY\1", 7)), "cut short in its preamble"));
  CHECK(Contains(ErrorOf(WithDict(dict("(5,)"), rows, 4)), "format version 4.0"));
  CHECK(Contains(ErrorOf(WithDict(dict("(5,)"), rows).substr(0, 40)), "cut short"));
  // A shape that lies: more than 2^63 bytes, more than the file holds, less.
  CHECK(Contains(ErrorOf(WithDict(dict("(4294967296, 4294967296)"), rows)),
                 "holds more than 2^63 bytes"));
  CHECK(Contains(ErrorOf(WithDict(dict("(99999999999,)"), rows)),
                 "declares 399999999996 bytes of data (shape (99999999999,) of <i4), the file "
                 "holds 20: cut short"));
  CHECK(Contains(ErrorOf(WithDict(dict("(4,)"), rows)), "bytes after the array"));
  CHECK(Contains(ErrorOf(WithDict(dict("(5)"), rows)), "one-dimensional shape without its comma"));
  CHECK(Contains(ErrorOf(WithDict(dict("(-5,)"), rows)), "not a non-negative integer"));
  CHECK(Contains(ErrorOf(WithDict(dict("(99999999999999999999,)"), rows)), "over 2^63"));
  CHECK(Contains(
      ErrorOf(WithDict("{'descr': '<i4', 'fortran_order': False, 'shape': (5,), 'x': 1}", rows)),
      "an unknown key 'x'"));
  CHECK(Contains(ErrorOf(WithDict("{'descr': '<i4', 'descr': '<i4', 'shape': (5,)}", rows)),
                 "the key 'descr' twice"));
  CHECK(Contains(ErrorOf(WithDict("{'descr': '<i4', 'shape': (5,)}", rows)), "must all be there"));
  CHECK(Contains(ErrorOf(WithDict("{'descr': '<c8', 'fortran_order': False, 'shape': (5,)}", rows)),
                 "dtype '<c8' is not supported"));
  CHECK(Contains(ErrorOf(WithDict("{'descr': '|O', 'fortran_order': False, 'shape': (5,)}", rows)),
                 "Python objects"));
  CHECK(Contains(ErrorOf(WithDict("{'descr': [('a', '<i4')], 'fortran_order': False, "
                                  "'shape': (5,)}",
                                  rows)),
                 "a structured dtype"));
  CHECK(Contains(ErrorOf(WithDict(dict("(5,)") + " x", rows)), "text after the dict"));
  CHECK(Contains(ErrorOf(WithDict(dict("(5,)"), rows).substr(0, 10) + "\xff\xff"),
                 "cut short"));  // a length past the file's end
  NumpySpec small;
  small.max_header_bytes = 64;
  CHECK(Contains(ErrorOf(WithDict(dict("(5,)") + std::string(100, ' '), rows), small),
                 "more than NumpySpec::max_header_bytes (64)"));
  // Version 2's 32-bit length, read the same way.
  NumpySpec spec;
  auto v2 = [&] {
    TempDir dir;
    WriteRaw(dir.File("x.npy"), WithDict(dict("(5,)"), rows, 2));
    return InspectNumpyPart({{dir.File("x.npy"), ""}, {Fixture("y.npy"), ""}}, spec);
  }();
  CHECK_MESSAGE(v2.ok(), v2.status().message());
}

TEST_CASE("hostile parts and archives: lengths that disagree, labels that do not fit, cut zips") {
  TempDir dir;
  WriteRaw(dir.File("x4.npy"), EncodeNpy(NpyDtype::kFloat32, {4, 1}, std::string(16, '\0')));
  CHECK(Contains(InspectNumpyPart({{dir.File("x4.npy"), ""}, {Fixture("y.npy"), ""}}, {}).status(),
                 "holds 4 examples (shape (4, 1)), " + Fixture("y.npy") +
                     " 5 labels (shape (5,)): the first axes must agree"));
  CHECK(Contains(
      InspectNumpyPart({{Fixture("x_f4.npy"), ""}, {Fixture("x_f4.npy"), ""}}, {}).status(),
      "classes must be one integer per example, shape (5,), got <f4 of shape (5, 6)"));
  NumpySpec two;
  two.num_classes = 2;
  CHECK(Contains(ReadExamples({{{Fixture("x_f4.npy"), ""}, {Fixture("y.npy"), ""}}}, two).status(),
                 "class 2 is not in [0, 2) (NumpySpec::num_classes)"));
  // A cut archive, and a deflated member whose data is cut or corrupt.
  const std::string stored = ReadFile(Fixture("data.npz"));
  WriteRaw(dir.File("cut.npz"), stored.substr(0, stored.size() - 30));
  CHECK(Contains(
      InspectNumpyPart({{dir.File("cut.npz"), "x"}, {dir.File("cut.npz"), "y"}}, {}).status(),
      dir.File("cut.npz") + ": not a valid zip archive"));
  const std::string deflated = ReadFile(Fixture("data_deflated.npz"));
  auto members = internal::ListZipMembers(deflated);
  REQUIRE(members.ok());
  for (const auto& member : *members) {
    if (member.name != "x.npy") continue;
    std::string corrupt = deflated;
    for (std::size_t i = member.data_offset + 2; i < member.data_offset + member.compressed_bytes;
         ++i) {
      corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
    }
    WriteRaw(dir.File("corrupt.npz"), corrupt);
    auto read =
        ReadExamples({{{dir.File("corrupt.npz"), "x"}, {dir.File("corrupt.npz"), "y"}}}, {});
    REQUIRE_FALSE(read.ok());
    CHECK(Contains(read.status(), dir.File("corrupt.npz") + ":x: "));
  }
  CHECK(Contains(internal::ListZipMembers("").status(), "shorter than an end-of-directory"));
  CHECK(Contains(internal::ListZipMembers(std::string(100, 'P')).status(),
                 "no end-of-directory record"));
  // A record from elsewhere is refused, not misread.
  auto decode = MakeNumpyDecoder({});
  REQUIRE(decode.ok());
  for (const std::string& record : {std::string(), std::string("\x09\x00\0\0\0\0", 6),
                                    std::string("\x00\x05\x05\0\0\0abcde\1", 12)}) {
    CHECK(Contains((*decode)(record).status(), "not a NumPy record"));
  }
}

// `archive` with the central directory's CRC-32 of `member` replaced by `crc`.
std::string WithDirectoryCrc(std::string archive, const std::string& member, std::uint32_t crc) {
  const std::string entry = std::string("PK\x01\x02", 4);
  for (std::size_t at = archive.find(entry); at != std::string::npos;
       at = archive.find(entry, at + 1)) {
    if (archive.compare(at + 46, member.size(), member) != 0) continue;  // the entry's name
    std::memcpy(archive.data() + at + 16, &crc, sizeof(crc));
    return archive;
  }
  FAIL("no directory entry for " << member);
  return archive;
}

TEST_CASE("a member whose bytes miss its CRC-32 is an error once read, stored or deflated") {
  TempDir dir;
  NumpySpec spec;
  spec.num_classes = 3;
  // A stored member with one byte of its last example changed: a valid float, caught by its CRC.
  const std::string stored = ReadFile(Fixture("data.npz"));
  auto members = internal::ListZipMembers(stored);
  REQUIRE(members.ok());
  for (const auto& member : *members) {
    if (member.name != "x.npy") continue;
    std::string changed = stored;
    char& byte = changed[member.data_offset + member.compressed_bytes - 2];
    byte = static_cast<char>(byte ^ 0x01);
    WriteRaw(dir.File("changed.npz"), changed);
  }
  // A deflated member that inflates cleanly, its directory recording another CRC.
  WriteRaw(dir.File("wrong_crc.npz"),
           WithDirectoryCrc(ReadFile(Fixture("data_deflated.npz")), "y.npy", 0x12345678));
  for (const std::string name : {"changed.npz", "wrong_crc.npz"}) {
    CAPTURE(name);
    const std::string path = dir.File(name);
    const std::string array = name == "changed.npz" ? "x" : "y";
    CHECK(InspectNumpyPart({{path, "x"}, {path, "y"}}, spec).ok());  // headers alone: not read
    auto read = ReadExamples({{{path, "x"}, {path, "y"}}}, spec);
    REQUIRE_FALSE(read.ok());
    CHECK(read.status().code() == absl::StatusCode::kDataLoss);
    CHECK(Contains(read.status(), path + ":" + array + ": example 4: the data's CRC-32 is 0x"));
    CHECK(Contains(read.status(), "the member is corrupt (write the archive again)"));
  }
  const std::string wrong = dir.File("wrong_crc.npz");
  CHECK(Contains(ReadExamples({{{wrong, "x"}, {wrong, "y"}}}, spec).status(),
                 "the archive's directory records 0x12345678"));
  // The untouched archives read whole, their CRCs checked.
  for (const std::string name : {"data.npz", "data_deflated.npz"}) {
    CHECK(ReadExamples({{{Fixture(name), "x"}, {Fixture(name), "y"}}}, spec).ok());
  }
}

// The ids each of `num_shards` streams reads over 3 parts of 10 examples (ids 0 to 29).
std::vector<std::vector<int>> ShardIds(const std::vector<NumpyPart>& parts, int num_shards) {
  auto dataset = NumpyDataset::Create(parts, {});
  REQUIRE(dataset.ok());
  std::vector<std::vector<int>> shards;
  for (int shard = 0; shard < num_shards; ++shard) {
    StreamOptions options;
    options.batch_size = 4;
    options.example_shape = {1};
    options.shuffle_buffer = 8;
    options.seed = 3;
    options.num_shards = num_shards;
    options.shard_index = shard;
    options.decode_threads = 2;
    auto stream = StreamPipeline::Create(*dataset, *MakeNumpyDecoder({}), options);
    REQUIRE_MESSAGE(stream.ok(), stream.status().message());
    auto ids = testing::FirstFeatures(**stream);
    REQUIRE_MESSAGE(ids.ok(), ids.status().message());
    shards.push_back(*ids);
  }
  return shards;
}

TEST_CASE("sharding by part and by example: disjoint, covering, the same every run") {
  TempDir dir;
  std::vector<NumpyPart> parts;
  for (int part = 0; part < 3; ++part) {
    std::vector<std::int32_t> ids(10);
    for (int i = 0; i < 10; ++i) ids[static_cast<std::size_t>(i)] = part * 10 + i;
    const std::string x = dir.File("x" + std::to_string(part) + ".npy");
    const std::string y = dir.File("y" + std::to_string(part) + ".npy");
    WriteRaw(x, EncodeNpy(NpyDtype::kInt32, {10},
                          std::string_view(reinterpret_cast<const char*>(ids.data()), 40)));
    WriteRaw(y, EncodeNpy(NpyDtype::kUint8, {10}, std::string(10, '\0')));
    parts.push_back({{x, ""}, {y, ""}});
  }
  for (int num_shards : {1, 2, 3, 4, 7}) {
    CAPTURE(num_shards);
    const auto shards = ShardIds(parts, num_shards);
    CHECK(shards == ShardIds(parts, num_shards));
    std::multiset<int> all;
    for (const auto& shard : shards) all.insert(shard.begin(), shard.end());
    std::multiset<int> expected;
    for (int id = 0; id < 30; ++id) expected.insert(id);
    CHECK(all == expected);
  }
}

}  // namespace
}  // namespace taas::data
