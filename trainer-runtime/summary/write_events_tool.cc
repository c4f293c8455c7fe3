// Writes a small known event file into argv[1], for the test that stock TensorBoard reads it.
#include <cstdio>
#include <vector>

#include "taas/summary/event_writer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  auto writer = taas::summary::EventWriter::Create(argv[1]);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
    return 1;
  }
  const std::vector<float> weights = {-1, 0, 0, 1, 2};
  for (int step = 1; step <= 5; ++step) {
    auto s = (*writer)->WriteSummary(step * 10,
                                     {{"loss", 1.0f / static_cast<float>(step)},
                                      {"learning_rate", 0.5f},
                                      {"examples_per_sec", 100.0f * step},
                                      {"global_step_per_sec", 2.0f},
                                      {"zero", 0.0f}},
                                     {{"dense/kernel", taas::summary::Histogram::Of(weights, 3)}});
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
