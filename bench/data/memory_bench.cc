// Peak RSS of a process reading a TFRecord set through the stream pipeline, against issue 36's
// target: at most the pipeline's buffers (computed from its options) plus 100 MiB. Writes the set
// (Fashion-MNIST-sized examples of 784 floats) into a temporary folder, reads it in a child
// process of its own (so the writer's memory is not counted), prints the figures and the ratio,
// and removes the folder. Usage: taas_data_memory_bench [--mib 2048] [--dir /tmp]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "taas/bench/measure.h"
#include "taas/data/example.h"
#include "taas/data/stream_pipeline.h"
#include "taas/data/tfrecord.h"

namespace {

namespace data = taas::data;

constexpr std::int64_t kElements = 784;
constexpr int kFiles = 16;
constexpr double kMiB = 1024.0 * 1024.0;
// What the target allows beyond the buffers: the binary, its libraries, the allocator's slack.
constexpr double kAllowanceMiB = 100;

// The options read with: a shuffle buffer as large as the examples' tutorials use.
data::StreamOptions Options() {
  data::StreamOptions options;
  options.batch_size = 64;
  options.example_shape = {kElements};
  options.shuffle_buffer = 10000;
  options.decode_threads = 2;
  options.prefetch = 2;
  return options;
}

std::string Record(std::int64_t id) {
  std::vector<float> image(kElements);
  for (std::int64_t i = 0; i < kElements; ++i) image[i] = static_cast<float>((id + i) % 256) / 255;
  return data::EncodeTfRecord(data::SerializeExample(
      {{"image", data::FloatList(image)}, {"label", data::Int64List{id % 10}}}));
}

// Writes about `bytes` of records into kFiles files; the number of records written.
std::int64_t Write(const std::string& dir, std::uint64_t bytes) {
  const std::uint64_t record_bytes = Record(0).size();
  const std::int64_t records = static_cast<std::int64_t>(bytes / record_bytes);
  std::int64_t id = 0;
  for (int file = 0; file < kFiles; ++file) {
    std::ofstream out(dir + "/part-" + std::to_string(file) + ".tfrecord", std::ios::binary);
    for (std::int64_t end = records * (file + 1) / kFiles; id < end; ++id) out << Record(id);
    if (!out) {
      std::fprintf(stderr, "writing %s failed\n", dir.c_str());
      std::exit(1);
    }
  }
  return records;
}

double CurrentRssMiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024;
  }
  return 0;
}

// The child: reads every record once and prints what it read and its figures.
int Read(const std::string& dir) {
  const double start_rss = CurrentRssMiB();
  auto files = data::TfRecordDataset::Create({dir + "/part-*.tfrecord"});
  data::ExampleSpec spec;
  spec.input_feature = "image";
  spec.label_feature = "label";
  spec.example_shape = {kElements};
  spec.num_classes = 10;
  auto decode = data::MakeExampleDecoder(spec);
  if (!files.ok() || !decode.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string((files.ok() ? decode.status() : files.status()).message()).c_str());
    return 1;
  }
  auto stream = data::StreamPipeline::Create(*files, *decode, Options());
  if (!stream.ok()) {
    std::fprintf(stderr, "%s\n", std::string(stream.status().message()).c_str());
    return 1;
  }
  const auto begin = taas::bench::Clock::now();
  std::int64_t examples = 0;
  for (;;) {
    auto batch = (*stream)->NextBatch();
    if (!batch.ok()) {
      std::fprintf(stderr, "%s\n", std::string(batch.status().message()).c_str());
      return 1;
    }
    if (!batch->has_value()) break;
    examples += (*batch)->images.shape()[0];
  }
  const double seconds = taas::bench::Seconds(begin);
  const std::int64_t held = (*stream)->max_examples_held();
  std::printf("%lld %.3f %.1f %lld\n", static_cast<long long>(examples), seconds, start_rss,
              static_cast<long long>(held));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t mib = 2048;
  std::string parent = std::filesystem::temp_directory_path().string();
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--mib") == 0) {
      mib = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (std::strcmp(argv[i], "--dir") == 0) {
      parent = argv[i + 1];
    } else if (std::strcmp(argv[i], "--read") == 0) {
      return Read(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: %s [--mib 2048] [--dir /tmp]\n", argv[0]);
      return 2;
    }
  }
  const std::uint64_t bytes = mib << 20;
  std::error_code error;
  const auto space = std::filesystem::space(parent, error);
  // The set, and as much again for whatever else writes there meanwhile.
  if (error || space.available < 2 * bytes) {
    std::fprintf(stderr,
                 "%s: %.0f MiB free, the bench needs %llu MiB (twice the set): pass --dir\n",
                 parent.c_str(), error ? 0.0 : space.available / kMiB,
                 static_cast<unsigned long long>(2 * mib));
    return 1;
  }
  std::string dir = parent + "/taas-data-memory-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const auto write_begin = taas::bench::Clock::now();
  const std::int64_t records = Write(dir, bytes);
  const double write_seconds = taas::bench::Seconds(write_begin);

  // The reader in a process of its own: its ru_maxrss is its own peak.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", error).string();
  std::string command = "'" + self + "' --read '" + dir + "'";
  std::FILE* child = popen(command.c_str(), "r");
  char line[256] = {};
  const bool got = child != nullptr && std::fgets(line, sizeof(line), child) != nullptr;
  const int status = child != nullptr ? pclose(child) : -1;
  std::filesystem::remove_all(dir, error);
  long long examples = 0, held = 0;
  double seconds = 0, start_rss = 0;
  if (!got || status != 0 ||
      std::sscanf(line, "%lld %lf %lf %lld", &examples, &seconds, &start_rss, &held) != 4) {
    std::fprintf(stderr, "the reading process failed (status %d)\n", status);
    return 1;
  }
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  const double peak_mib = static_cast<double>(usage.ru_maxrss) / 1024;

  // The buffers: every example held (shuffle buffer, decode window, batches) as floats, and one
  // decode batch of raw records per decode thread.
  const data::StreamOptions o = Options();
  const double record_bytes = static_cast<double>(Record(0).size());
  const double buffers_mib = (static_cast<double>(held) * kElements * sizeof(float) +
                              o.decode_threads * o.decode_batch * record_bytes) /
                             kMiB;
  const double target_mib = buffers_mib + kAllowanceMiB;
  std::printf("data set: %lld records of %.0f bytes in %d files, %.0f MiB (written in %.1f s)\n",
              static_cast<long long>(records), record_bytes, kFiles,
              static_cast<double>(records) * record_bytes / kMiB, write_seconds);
  std::printf(
      "read: %lld examples in %.1f s (%.0f examples/s), shuffle %lld, batch %lld, "
      "%d decode threads, prefetch %d\n",
      examples, seconds, examples / seconds, static_cast<long long>(o.shuffle_buffer),
      static_cast<long long>(o.batch_size), o.decode_threads, o.prefetch);
  std::printf(
      "buffers: %lld examples held at most = %.1f MiB; target = buffers + %.0f MiB = "
      "%.1f MiB\n",
      held, buffers_mib, kAllowanceMiB, target_mib);
  std::printf(
      "peak RSS %.1f MiB (%.1f MiB before the pipeline): %.2fx the target (<= 1.00 "
      "meets it)\n",
      peak_mib, start_rss, peak_mib / target_mib);
  if (examples != records) {
    std::fprintf(stderr, "read %lld examples of %lld\n", examples, static_cast<long long>(records));
    return 1;
  }
  return 0;
}
