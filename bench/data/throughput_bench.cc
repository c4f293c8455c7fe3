// Decode + shuffle + batch throughput of the stream pipeline on a TFRecord file of Fashion-MNIST
// as tf.train.Examples (the image as 784 floats in [0, 1], the label as an int64), the taas side
// of bench/data/run.sh (its peer: tf_data_peer.py, tf.data on the same file and options).
//   taas_data_throughput_bench --write FILE          # the training set, from the IDX files
//   taas_data_throughput_bench --read FILE --threads N [--epochs 2]   # prints examples/s
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "taas/bench/measure.h"
#include "taas/data/example.h"
#include "taas/data/idx.h"
#include "taas/data/stream_pipeline.h"
#include "taas/data/tfrecord.h"

namespace {

namespace data = taas::data;

// The options both sides read with (tf_data_peer.py has the same numbers).
constexpr std::int64_t kShuffle = 10000;
constexpr std::int64_t kBatch = 100;
constexpr int kPrefetch = 2;

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
  return 1;
}

int Write(const std::string& path) {
  auto train = data::LoadMnistSplit(data::kFashionMnistDir, "train");
  if (!train.ok()) return Fail(train.status());
  const std::int64_t pixels = train->rows * train->cols;
  std::ofstream out(path, std::ios::binary);
  for (std::int64_t i = 0; i < train->count; ++i) {
    data::FloatList image(static_cast<std::size_t>(pixels));
    for (std::int64_t p = 0; p < pixels; ++p) {
      image[static_cast<std::size_t>(p)] =
          static_cast<float>(train->pixels[static_cast<std::size_t>(i * pixels + p)]) / 255.0f;
    }
    out << data::EncodeTfRecord(data::SerializeExample(
        {{"image", std::move(image)},
         {"label", data::Int64List{train->labels[static_cast<std::size_t>(i)]}}}));
  }
  return out ? 0 : Fail(absl::InternalError("writing " + path + " failed"));
}

int Read(const std::string& path, int threads, int epochs) {
  auto files = data::TfRecordDataset::Create({path});
  if (!files.ok()) return Fail(files.status());
  data::ExampleSpec spec;
  spec.input_feature = "image";
  spec.label_feature = "label";
  spec.example_shape = {784};
  spec.num_classes = 10;
  auto decode = data::MakeExampleDecoder(spec);
  if (!decode.ok()) return Fail(decode.status());
  data::StreamOptions options;
  options.batch_size = kBatch;
  options.example_shape = {784};
  options.shuffle_buffer = kShuffle;
  options.decode_threads = threads;
  options.prefetch = kPrefetch;
  const auto begin = taas::bench::Clock::now();
  const double cpu_begin = taas::bench::CpuSeconds();
  std::int64_t examples = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    options.seed = static_cast<std::uint64_t>(epoch);
    auto stream = data::StreamPipeline::Create(*files, *decode, options);
    if (!stream.ok()) return Fail(stream.status());
    for (;;) {
      auto batch = (*stream)->NextBatch();
      if (!batch.ok()) return Fail(batch.status());
      if (!batch->has_value()) break;
      examples += (*batch)->images.shape()[0];
    }
  }
  const double seconds = taas::bench::Seconds(begin);
  std::printf("examples %lld seconds %.3f cpu_seconds %.3f examples_per_second %.0f\n",
              static_cast<long long>(examples), seconds, taas::bench::CpuSeconds() - cpu_begin,
              static_cast<double>(examples) / seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string write, read;
  int threads = 1, epochs = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--write") == 0) {
      write = argv[i + 1];
    } else if (std::strcmp(argv[i], "--read") == 0) {
      read = argv[i + 1];
    } else if (std::strcmp(argv[i], "--threads") == 0) {
      threads = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--epochs") == 0) {
      epochs = std::atoi(argv[i + 1]);
    }
  }
  if (!write.empty()) return Write(write);
  if (!read.empty() && threads >= 1 && epochs >= 1) return Read(read, threads, epochs);
  std::fprintf(stderr, "usage: %s --write FILE | --read FILE --threads N [--epochs 2]\n", argv[0]);
  return 2;
}
