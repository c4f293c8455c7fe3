// make-fashion-mnist-jpeg: Fashion-MNIST's IDX files written as a folder of JPEG files, one folder
// per class, as the Zalando post's data set is laid out and as data::ImageFolderDataset
// (taas/data/image_folder.h) reads it:
//
//   make-fashion-mnist-jpeg --out /data/fashion-mnist-jpeg [--source DIR] [--quality 95]
//                           [--limit N]
//
//   /data/fashion-mnist-jpeg/train/0_tshirt_top/00000.jpg ... train/9_ankle_boot/...
//   /data/fashion-mnist-jpeg/test/...                         (60,000 and 10,000 files)
//
// The folders start with the class index, so their sorted order is the IDX labels' order and a
// model trained from the folder predicts the same class numbers. Each image is 28 x 28 gray, as
// in the IDX files, encoded by libjpeg-turbo (data::EncodeJpeg) at --quality (95: TensorFlow's
// encode_jpeg default). --limit writes only the first N images of each split (for tests).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include "taas/data/idx.h"
#include "taas/data/image.h"

namespace {

namespace fs = std::filesystem;

// Fashion-MNIST's classes in label order (its README), as folder names.
constexpr const char* kClasses[] = {"0_tshirt_top", "1_trouser",   "2_pullover", "3_dress",
                                    "4_coat",       "5_sandal",    "6_shirt",    "7_sneaker",
                                    "8_bag",        "9_ankle_boot"};

struct Args {
  std::string out;
  std::string source = taas::data::kFashionMnistDir;
  int quality = 95;
  std::int64_t limit = -1;  // all
};

absl::Status WriteSplit(const Args& args, const std::string& split) {
  TAAS_ASSIGN_OR_RETURN(taas::data::ImageDataset data,
                        taas::data::LoadMnistSplit(args.source, split));
  TAAS_RETURN_IF_ERROR(taas::data::CheckLabels(data, std::size(kClasses)));
  const fs::path root = fs::path(args.out) / split;
  for (const char* name : kClasses) fs::create_directories(root / name);
  const std::int64_t count = args.limit >= 0 ? std::min(args.limit, data.count) : data.count;
  const std::int64_t size = data.rows * data.cols;
  for (std::int64_t i = 0; i < count; ++i) {
    taas::data::Pixels pixels{data.rows, data.cols, 1, {}};
    pixels.data.assign(data.pixels.begin() + i * size, data.pixels.begin() + (i + 1) * size);
    TAAS_ASSIGN_OR_RETURN(std::string jpeg, taas::data::EncodeJpeg(pixels, args.quality));
    std::string file = std::to_string(i);
    file = std::string(5 - std::min<std::size_t>(5, file.size()), '0') + file + ".jpg";
    const fs::path path = root / kClasses[data.labels[static_cast<std::size_t>(i)]] / file;
    std::ofstream stream(path, std::ios::binary);
    stream.write(jpeg.data(), static_cast<std::streamsize>(jpeg.size()));
    if (!stream.good()) return absl::InternalError("cannot write " + path.string());
  }
  std::cout << "wrote " << count << " " << split << " images under " << root.string() << "\n";
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "make-fashion-mnist-jpeg: " << flag << " needs a value\n";
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--out") {
      args.out = value;
    } else if (flag == "--source") {
      args.source = value;
    } else if (flag == "--quality") {
      args.quality = std::atoi(value.c_str());
    } else if (flag == "--limit") {
      args.limit = std::atoll(value.c_str());
    } else {
      std::cerr << "make-fashion-mnist-jpeg: unknown flag " << flag
                << " (flags: --out DIR, --source DIR, --quality 1-100, --limit N)\n";
      return 2;
    }
  }
  if (args.out.empty()) {
    std::cerr << "make-fashion-mnist-jpeg: --out DIR is required (where train/ and test/ go)\n";
    return 2;
  }
  for (const char* split : {"train", "test"}) {
    const absl::Status status = WriteSplit(args, split);
    if (!status.ok()) {
      std::cerr << "make-fashion-mnist-jpeg: " << status.message() << "\n";
      return 1;
    }
  }
  return 0;
}
