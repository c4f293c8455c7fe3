// The chief's summaries on the schedule the settings set (save_summaries_steps and
// save_summaries_secs, schedule.h's rule): the steps of the events a local run writes.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "taas/runtime/dist_model.h"
#include "taas/runtime/local.h"
#include "taas/summary/event_writer.h"

namespace taas {
namespace {

namespace fs = std::filesystem;

// The schedule is under test, not training: one variable that never moves (its gradient stays
// 0) under the default optimizer, a constant loss.
struct Still : DistModel {
  Variable still{"still", Tensor({1}), Tensor({1})};

  absl::Status build_model(ModelBuilder& builder) override {
    builder.AddVariable(&still);
    return absl::OkStatus();
  }
  StepResult train(Session&) override {
    StepResult constant;
    constant.loss = 1.0f;
    return constant;
  }
};

struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "taas-summaries-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

// Trains 20 steps with `flags`; the global steps of the summaries written (-1: the run failed).
std::vector<std::int64_t> SummarySteps(const std::vector<std::string>& flags) {
  TempDir dir;
  std::vector<std::string> all = {"--max_steps=20", "--model_dir=" + dir.path,
                                  "--save_checkpoints_secs=0"};
  all.insert(all.end(), flags.begin(), flags.end());
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(std::tmpfile(), &std::fclose);
  if (RunLocalTraining(
          all, [] { return std::make_unique<Still>(); }, log.get()) != 0) {
    std::rewind(log.get());
    char line[4096];
    while (std::fgets(line, sizeof(line), log.get()) != nullptr) MESSAGE(line);
    return {-1};
  }
  std::vector<std::int64_t> steps;
  for (const auto& file : fs::directory_iterator(dir.path)) {
    if (file.path().filename().string().rfind("events.out.tfevents", 0) != 0) continue;
    auto events = summary::ReadEventFile(file.path().string());
    REQUIRE(events.ok());
    for (const auto& event : *events) {
      if (!event.scalars.empty()) steps.push_back(event.step);
    }
  }
  return steps;
}

TEST_CASE("summaries by steps: the first step, then every N steps since the last one") {
  CHECK(SummarySteps({"--save_summaries_steps=5"}) == std::vector<std::int64_t>{1, 6, 11, 16});
}

TEST_CASE("summaries by seconds only: the first step, then once the seconds passed") {
  // An hour never passes in 20 steps.
  CHECK(SummarySteps({"--save_summaries_steps=0", "--save_summaries_secs=3600"}) ==
        std::vector<std::int64_t>{1});
}

TEST_CASE("summaries by steps and seconds: whichever comes first") {
  CHECK(SummarySteps({"--save_summaries_steps=8", "--save_summaries_secs=3600"}) ==
        std::vector<std::int64_t>{1, 9, 17});
}

TEST_CASE("both periods 0: no summaries") {
  CHECK(SummarySteps({"--save_summaries_steps=0", "--save_summaries_secs=0"}).empty());
}

}  // namespace
}  // namespace taas
