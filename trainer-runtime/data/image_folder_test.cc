#include "taas/data/image_folder.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "taas/data/stream_pipeline.h"
#include "test_files.h"
#include "test_images.h"
#include "test_read.h"

namespace taas::data {
namespace {

using testing::Contains;
using testing::PngOf;
using testing::TempDir;
using testing::WriteRaw;

constexpr float kScale = 1.0f / 255.0f;

// A 4 x 4 gray picture whose every pixel is `id` (an image's id survives resizing and cropping).
Pixels Flat(std::uint8_t id) { return Pixels{4, 4, 1, std::vector<std::uint8_t>(16, id)}; }

std::string Jpeg(const Pixels& pixels) {
  auto encoded = EncodeJpeg(pixels, 100);
  REQUIRE_MESSAGE(encoded.ok(), encoded.status().message());
  return *std::move(encoded);
}

void Write(const TempDir& dir, const std::string& name, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(dir.File(name)).parent_path());
  WriteRaw(dir.File(name), bytes);
}

std::shared_ptr<ImageFolderDataset> Folders(const std::string& root,
                                            const ImageFolderOptions& options = {}) {
  auto dataset = ImageFolderDataset::FromFolders(root, options);
  REQUIRE_MESSAGE(dataset.ok(), dataset.status().message());
  return *std::move(dataset);
}

ImageSpec Gray(std::int64_t side) {
  ImageSpec spec;
  spec.height = spec.width = side;
  spec.channels = 1;
  return spec;
}

// Three classes of flat images, ids 10 + 10 * class + i: JPEG and PNG mixed, one PNG named .jpg.
void ThreeClasses(const TempDir& dir, int per_class) {
  const std::vector<std::string> classes = {"cat", "ant", "bee"};  // classes: ant 0, bee 1, cat 2
  std::map<std::string, int> index = {{"ant", 0}, {"bee", 1}, {"cat", 2}};
  for (const std::string& name : classes) {
    for (int i = 0; i < per_class; ++i) {
      const auto id = static_cast<std::uint8_t>(10 + 10 * index[name] + i);
      const std::string stem = "root/" + name + "/" + std::to_string(i);
      if (i % 2 == 0) {
        Write(dir, stem + ".jpg", Jpeg(Flat(id)));
      } else {
        Write(dir, stem + ".jpg", PngOf(Flat(id)));  // by content, not by extension
      }
    }
  }
}

// Every example of a stream: (id, label) pairs in order, ids read back from the flat images.
std::vector<std::pair<int, int>> Drain(BatchStream& stream) {
  std::vector<std::pair<int, int>> out;
  for (;;) {
    auto batch = stream.NextBatch();
    REQUIRE_MESSAGE(batch.ok(), batch.status().message());
    if (!batch->has_value()) return out;
    const std::int64_t elements = (*batch)->images.shape()[1] * (*batch)->images.shape()[2];
    for (std::int64_t b = 0; b < (*batch)->images.shape()[0]; ++b) {
      out.emplace_back(static_cast<int>((*batch)->images.data()[b * elements] * 255.0f + 0.5f),
                       (*batch)->labels[static_cast<std::size_t>(b)]);
    }
  }
}

std::unique_ptr<StreamPipeline> Stream(std::shared_ptr<ImageFolderDataset> files,
                                       const ImageSpec& spec, StreamOptions options) {
  auto decode = MakeImageFolderDecoder(files, spec);
  REQUIRE_MESSAGE(decode.ok(), decode.status().message());
  options.example_shape = ImageShape(spec);
  auto stream = StreamPipeline::Create(files, *std::move(decode), options);
  REQUIRE_MESSAGE(stream.ok(), stream.status().message());
  return *std::move(stream);
}

TEST_CASE("class folders: classes by sorted name, files sorted, others and hidden ones left out") {
  TempDir dir;
  ThreeClasses(dir, 2);
  Write(dir, "root/ant/nested/deeper.png", PngOf(Flat(99)));
  Write(dir, "root/ant/README.txt", "not an image");
  Write(dir, "root/ant/._0.jpg", "macOS metadata named like an image");
  Write(dir, "root/.ipynb_checkpoints/x.jpg", "a hidden folder is not a class");
  Write(dir, "root/loose.jpg", Jpeg(Flat(1)));  // files at the root belong to no class
  auto files = Folders(dir.File("root"));
  CHECK(files->class_names() == std::vector<std::string>{"ant", "bee", "cat"});
  CHECK(files->num_classes() == 3);
  REQUIRE(files->num_parts() == 7);
  CHECK(files->part_name(0) == dir.File("root/ant/0.jpg"));
  CHECK(files->part_name(2) == dir.File("root/ant/nested/deeper.png"));
  CHECK(files->part_name(6) == dir.File("root/cat/1.jpg"));
  std::vector<int> labels;
  for (std::int64_t part = 0; part < files->num_parts(); ++part)
    labels.push_back(files->label(part));
  CHECK(labels == std::vector<int>{0, 0, 0, 1, 1, 2, 2});

  ImageFolderOptions fixed;
  fixed.class_names = {"cat", "bee", "ant"};  // the order given is the indices
  auto reordered = Folders(dir.File("root"), fixed);
  CHECK(reordered->label(0) == 0);
  CHECK(reordered->part_name(0) == dir.File("root/cat/0.jpg"));
  CHECK(reordered->label(4) == 2);
  CHECK(reordered->part_name(4) == dir.File("root/ant/0.jpg"));
}

TEST_CASE("class folders that cannot be read as classes are errors naming the folder") {
  TempDir dir;
  auto missing = ImageFolderDataset::FromFolders(dir.File("nowhere"));
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(Contains(missing.status(), dir.File("nowhere") + " is not a folder"));

  std::filesystem::create_directories(dir.File("empty"));
  Write(dir, "empty/stray.jpg", Jpeg(Flat(1)));
  CHECK(Contains(ImageFolderDataset::FromFolders(dir.File("empty")).status(),
                 "holds no class folders: put each class's images in a folder of its own"));

  Write(dir, "root/a/1.png", PngOf(Flat(1)));
  Write(dir, "root/b/notes.txt", "no image here");
  auto empty_class = ImageFolderDataset::FromFolders(dir.File("root"));
  CHECK(empty_class.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Contains(empty_class.status(),
                 "class folder " + dir.File("root/b") + " holds no .jpg, .jpeg or .png file"));

  Write(dir, "root/b/1.png", PngOf(Flat(1)));
  ImageFolderOptions other;
  other.class_names = {"a", "c"};
  CHECK(Contains(ImageFolderDataset::FromFolders(dir.File("root"), other).status(),
                 "holds the class folders a, b, but ImageFolderOptions::class_names is a, c"));
  other.class_names = {"a", "b", "a"};
  CHECK(Contains(ImageFolderDataset::FromFolders(dir.File("root"), other).status(), "each once"));
}

TEST_CASE("a list file: paths relative to its folder, spaces in paths, comments, CRLF") {
  TempDir dir;
  Write(dir, "images/a b.jpg", Jpeg(Flat(20)));
  Write(dir, "images/c.png", PngOf(Flat(30)));
  Write(dir, "lists/train.txt",
        "# path label\n../images/a b.jpg 4\r\n\n   \n" + dir.File("images/c.png") + "\t 1\n");
  auto files = ImageFolderDataset::FromListFile(dir.File("lists/train.txt"));
  REQUIRE_MESSAGE(files.ok(), files.status().message());
  REQUIRE((*files)->num_parts() == 2);
  CHECK((*files)->label(0) == 4);
  CHECK((*files)->label(1) == 1);
  CHECK((*files)->num_classes() == 5);
  CHECK((*files)->class_names().empty());
  CHECK((*files)->part_name(1) == dir.File("images/c.png") + " (train.txt line 5)");

  auto stream = Stream(*files, Gray(2), StreamOptions{});
  CHECK(Drain(*stream) == std::vector<std::pair<int, int>>{{20, 4}, {30, 1}});
}

TEST_CASE("a list file's bad lines are errors naming the list and the line") {
  TempDir dir;
  Write(dir, "a.jpg", Jpeg(Flat(1)));
  auto list = [&](const std::string& text, ImageFolderOptions options = {}) {
    Write(dir, "list.txt", text);
    return ImageFolderDataset::FromListFile(dir.File("list.txt"), options).status();
  };
  const std::string at = "image list " + dir.File("list.txt");
  CHECK(Contains(list("a.jpg 0\nmissing.jpg 1\n"),
                 at + " line 2: no file " + dir.File("missing.jpg") +
                     " (a relative path is relative to the list's folder)"));
  CHECK(list("a.jpg 0\nmissing.jpg 1\n").code() == absl::StatusCode::kNotFound);
  CHECK(Contains(list("a.jpg\n"), at + " line 1: \"a.jpg\" has no label"));
  CHECK(Contains(list("a.jpg 0\na.jpg cat\n"),
                 at + " line 2: the label \"cat\" is not a class index in [0, 2147483647)"));
  CHECK(Contains(list("a.jpg -1\n"), "the label \"-1\" is not a class index"));
  CHECK(Contains(list("a.jpg 1.5\n"), "the label \"1.5\" is not a class index"));
  CHECK(Contains(list("a.jpg 99999999999\n"), "the label \"99999999999\" is not"));
  ImageFolderOptions ten;
  ten.num_classes = 10;
  CHECK(Contains(list("a.jpg 10\n", ten),
                 "line 1: the label \"10\" is not a class index in [0, 10) "
                 "(ImageFolderOptions::num_classes)"));
  CHECK(Contains(list("# nothing\n\n"), "names no files"));
  CHECK(ImageFolderDataset::FromListFile(dir.File("none.txt")).status().code() ==
        absl::StatusCode::kNotFound);
  ImageFolderOptions named;
  named.class_names = {"a"};
  CHECK(Contains(list("a.jpg 0\n", named), "class_names is for class folders"));
}

TEST_CASE("streamed: every image once with its class, the same whatever the decode threads") {
  TempDir dir;
  ThreeClasses(dir, 5);
  auto files = Folders(dir.File("root"));
  StreamOptions options;
  options.batch_size = 4;
  const std::vector<std::pair<int, int>> in_order = Drain(*Stream(files, Gray(3), options));
  REQUIRE(in_order.size() == 15);
  for (std::size_t i = 0; i < in_order.size(); ++i) {
    CHECK(in_order[i].first == 10 + 10 * static_cast<int>(i / 5) + static_cast<int>(i % 5));
    CHECK(in_order[i].second == static_cast<int>(i / 5));
  }

  options.shuffle_buffer = 4;
  options.seed = 7;
  const auto one = Drain(*Stream(files, Gray(3), options));
  options.decode_threads = 3;
  options.decode_batch = 2;
  CHECK(Drain(*Stream(files, Gray(3), options)) == one);
  CHECK(std::multiset<std::pair<int, int>>(one.begin(), one.end()) ==
        std::multiset<std::pair<int, int>>(in_order.begin(), in_order.end()));
  CHECK(one != in_order);  // the files' order itself is shuffled every epoch
}

TEST_CASE("sharded by file across replicas: disjoint, covering, every class in each") {
  TempDir dir;
  ThreeClasses(dir, 4);
  auto files = Folders(dir.File("root"));
  std::multiset<int> all;
  for (int shard = 0; shard < 3; ++shard) {
    StreamOptions options;
    options.num_shards = 3;
    options.shard_index = shard;
    auto stream = Stream(files, Gray(2), options);
    CHECK(stream->plan().by_part());
    std::set<int> labels;
    for (const auto& [id, label] : Drain(*stream)) {
      all.insert(id);
      labels.insert(label);
    }
    CHECK(labels.size() == 3);
  }
  CHECK(all.size() == 12);
  CHECK(std::set<int>(all.begin(), all.end()).size() == 12);
}

TEST_CASE("training's random crop and flip repeat from run to run and change every epoch") {
  TempDir dir;
  // One 6 x 6 image of distinct pixels, so each crop and flip reads differently.
  Write(dir, "root/only/x.png", PngOf(testing::Gradient(6, 6, 1)));
  auto files = Folders(dir.File("root"));
  ImageSpec spec = Gray(4);
  spec.resize_height = spec.resize_width = 6;
  spec.random_crop = spec.random_flip = true;
  StreamOptions options;
  options.batch_size = 1;
  options.repeat = true;
  options.seed = 3;
  auto crops = [&](const StreamOptions& o) {
    auto stream = Stream(files, spec, o);
    std::vector<std::vector<float>> out;
    for (int epoch = 0; epoch < 12; ++epoch) {
      auto batch = stream->NextBatch();
      REQUIRE(batch.ok());
      REQUIRE(batch->has_value());
      CHECK((*batch)->epoch == epoch);
      const float* data = (*batch)->images.data();
      out.emplace_back(data, data + 16);
    }
    return out;
  };
  const auto first = crops(options);
  CHECK(crops(options) == first);
  CHECK(std::set<std::vector<float>>(first.begin(), first.end()).size() > 4);
  options.seed = 4;
  CHECK(crops(options) != first);

  // The evaluator's spec: the central crop, every epoch the same.
  spec.random_crop = spec.random_flip = false;
  options.seed = 3;
  const auto central = crops(options);
  CHECK(std::set<std::vector<float>>(central.begin(), central.end()).size() == 1);
  CHECK(central[0][0] == testing::Gradient(6, 6, 1).data[1 * 6 + 1] * kScale);
}

TEST_CASE("a hostile file in a folder stops the stream with an error naming it") {
  TempDir dir;
  ThreeClasses(dir, 2);
  Write(dir, "root/bee/bad.jpg", "\xff\xd8\xff\xe0 this is no JPEG at all");
  auto files = Folders(dir.File("root"));
  auto stream = Stream(files, Gray(2), StreamOptions{});
  const absl::Status error = testing::StreamError(*stream);
  CHECK(error.code() == absl::StatusCode::kDataLoss);
  CHECK(Contains(error, dir.File("root/bee/bad.jpg") + ": record 0 at byte offset 0: JPEG: "));

  ImageFolderOptions tiny;
  tiny.max_file_bytes = 10;
  auto small = Folders(dir.File("root"), tiny);
  auto reader = small->Open(0);
  REQUIRE(reader.ok());
  Record record;
  auto got = (*reader)->Next(record);
  CHECK(Contains(got.status(), dir.File("root/ant/0.jpg") + ": the file is "));
  CHECK(Contains(got.status(), "more than ImageFolderOptions::max_file_bytes (10)"));

  std::filesystem::remove(dir.File("root/ant/0.jpg"));
  auto gone = files->Open(0);
  REQUIRE(gone.ok());
  CHECK((*gone)->Next(record).status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("the decoder refuses what it cannot use") {
  CHECK(Contains(MakeImageFolderDecoder(nullptr, Gray(2)).status(), "no data set"));
  TempDir dir;
  Write(dir, "root/a/1.png", PngOf(Flat(1)));
  CHECK(Contains(MakeImageFolderDecoder(Folders(dir.File("root")), Gray(0)).status(),
                 "height must be in"));
  ImageFolderOptions options;
  options.max_file_bytes = 0;
  CHECK(Contains(ImageFolderDataset::FromFolders(dir.File("root"), options).status(),
                 "max_file_bytes must be >= 1"));
}

}  // namespace
}  // namespace taas::data
