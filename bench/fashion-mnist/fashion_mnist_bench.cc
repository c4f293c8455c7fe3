// Trains one Fashion-MNIST model in this process with taas::nn and prints one JSON line:
//   {"impl": "taas", "model": "cnn", "input": "idx", "examples_per_sec": ..., "peak_rss_mb": ...,
//    "test_accuracy": ..., ...}
// Usage: fashion_mnist_bench --model mlp|cnn [--epochs N] [--steps N] [--batch_size N]
//                            [--threads N] [--seed N] [--data_dir DIR] [--profile 1]
//                            [--conv1_chunk N] [--train_files GLOB --decode_threads N]
// --profile 1 prints each layer's CPU time per step (meaningful with --threads 1).
// --train_files streams the training set from TFRecord files (fashion-mnist-to-tfrecord's,
// taas/fashion_mnist/tfrecords.h) through data::StreamPipeline, with the in-memory pipeline's
// shuffle buffer and prefetch, instead of the IDX files in memory; the test set stays IDX, so
// the two runs differ only in the input (bench/fashion-mnist/tfrecord.sh compares them).
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>

#include "taas/bench/measure.h"
#include "taas/data/idx.h"
#include "taas/fashion_mnist/local_trainer.h"
#include "taas/fashion_mnist/tfrecords.h"
#include "taas/nn/compute.h"
#include "taas/nn/conv2d.h"
#include "taas/nn/max_pool2d.h"

namespace {

int Fail(const std::string& message) {
  std::cerr << "fashion_mnist_bench: " << message << "\n";
  return 2;
}

using taas::bench::CpuSeconds;

double PeakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {{"model", "cnn"},
                                              {"epochs", "1"},
                                              {"steps", "0"},
                                              {"batch_size", "100"},
                                              {"threads", "0"},
                                              {"seed", "1"},
                                              {"data_dir", taas::data::kFashionMnistDir},
                                              {"profile", "0"},
                                              {"conv1_chunk", "0"},
                                              {"train_files", ""},
                                              {"decode_threads", "1"}};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || i + 1 >= argc) return Fail("bad argument " + arg);
    const std::string key = arg.substr(2);
    if (!flags.count(key)) return Fail("unknown flag " + arg);
    flags[key] = argv[++i];
  }
  const std::int64_t batch_size = std::stoll(flags["batch_size"]);
  const std::uint64_t seed = std::stoull(flags["seed"]);

  auto train = taas::data::LoadMnistSplit(flags["data_dir"], "train");
  if (!train.ok()) return Fail(std::string(train.status().message()));
  auto test = taas::data::LoadMnistSplit(flags["data_dir"], "test");
  if (!test.ok()) return Fail(std::string(test.status().message()));
  auto train_set = std::make_shared<const taas::data::ImageDataset>(std::move(train).value());
  auto test_set = std::make_shared<const taas::data::ImageDataset>(std::move(test).value());

  absl::StatusOr<std::unique_ptr<taas::fashion_mnist::Model>> model;
  if (flags["model"] == "cnn") {
    model = std::unique_ptr<taas::fashion_mnist::Model>(
        new taas::fashion_mnist::Cnn(seed, std::stoll(flags["conv1_chunk"])));
  } else {
    model = taas::fashion_mnist::CreateModel(flags["model"], seed);
  }
  if (!model.ok()) return Fail(std::string(model.status().message()));

  taas::fashion_mnist::LocalTrainingOptions options;
  options.batch_size = batch_size;
  options.seed = seed;
  options.threads = std::stoi(flags["threads"]);
  const std::int64_t steps_per_epoch = (train_set->count + batch_size - 1) / batch_size;
  options.steps = std::stoll(flags["steps"]);
  if (options.steps <= 0) options.steps = std::stoll(flags["epochs"]) * steps_per_epoch;
  options.log_every = steps_per_epoch;
  options.on_log = [&](std::int64_t step, const taas::fashion_mnist::BatchStats& stats) {
    std::cerr << "taas " << flags["model"] << " epoch " << step / steps_per_epoch << " loss "
              << stats.loss << " train_accuracy "
              << static_cast<double>(stats.correct) / static_cast<double>(stats.examples) << "\n";
  };

  const bool profile = flags["profile"] == "1";
  if (profile) (*model)->network().EnableTiming(true);
  const double cpu_start = CpuSeconds();
  absl::StatusOr<taas::fashion_mnist::LocalTrainingResult> result;
  std::string input = "idx";
  if (flags["train_files"].empty()) {
    result = taas::fashion_mnist::TrainLocally(**model, train_set, test_set, options);
  } else {
    taas::data::StreamOptions stream_options;
    stream_options.batch_size = batch_size;
    stream_options.example_shape = (*model)->example_shape();
    stream_options.shuffle_buffer = options.shuffle_buffer;
    stream_options.seed = seed;
    stream_options.repeat = true;
    stream_options.decode_threads = std::stoi(flags["decode_threads"]);
    stream_options.prefetch = 4;  // as TrainLocally's in-memory pipeline
    auto stream = taas::fashion_mnist::OpenTfRecordStream({flags["train_files"]}, stream_options);
    if (!stream.ok()) return Fail(std::string(stream.status().message()));
    input = "tfrecord";
    result =
        taas::fashion_mnist::TrainLocally(**model, **stream, train_set->count, test_set, options);
  }
  if (!result.ok()) return Fail(std::string(result.status().message()));
  // Includes the test evaluation, a small share of the total.
  const double cpu_seconds = CpuSeconds() - cpu_start;
  if (profile) {
    for (const auto& timing : (*model)->network().timings()) {
      std::fprintf(stderr, "%-10s forward %8.3f ms/step  backward %8.3f ms/step\n",
                   timing.name.c_str(), 1e3 * timing.forward_seconds / result->steps,
                   1e3 * timing.backward_seconds / result->steps);
    }
    for (const auto& layer : (*model)->network().layers()) {
      if (auto* conv = dynamic_cast<taas::nn::Conv2D*>(layer.get())) {
        std::fprintf(stderr, "%s: %s\n", conv->name().c_str(), conv->ImplementationInfo().c_str());
      }
      if (auto* pool = dynamic_cast<taas::nn::MaxPool2D*>(layer.get())) {
        std::fprintf(stderr, "%s: %s\n", pool->name().c_str(), pool->ImplementationInfo().c_str());
      }
    }
  }
  std::printf(
      "{\"impl\": \"taas\", \"model\": \"%s\", \"input\": \"%s\", \"batch_size\": %lld, "
      "\"steps\": %lld, "
      "\"threads\": %d, \"train_seconds\": %.3f, \"examples_per_sec\": %.1f, "
      "\"examples_per_cpu_sec\": %.1f, \"peak_rss_mb\": %.1f, \"final_loss\": %.4f, "
      "\"test_accuracy\": %.4f}\n",
      flags["model"].c_str(), input.c_str(), static_cast<long long>(batch_size),
      static_cast<long long>(result->steps), taas::nn::ComputeThreads(), result->seconds,
      result->examples_per_second, result->examples / cpu_seconds, PeakRssMb(), result->last_loss,
      result->test_accuracy);
  return 0;
}
