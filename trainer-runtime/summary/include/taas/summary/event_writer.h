// TensorBoard event files: `events.out.tfevents.<unix secs>.<host>` holding TFRecord-framed
// Event protos (length, masked CRC-32C of the length, bytes, masked CRC-32C of the bytes), the
// first one carrying file_version "brain.Event:2". Stock TensorBoard reads them.
//
// Not thread-safe: one writer per directory, used from one thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "taas/base/status.h"

namespace taas::summary {

using Scalars = std::vector<std::pair<std::string, float>>;

// The distribution of a tensor's values, as TensorBoard's histogram dashboard shows it.
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit;  // Upper edge of each bucket; the first starts at min.
  std::vector<double> bucket;        // Values in each bucket.

  // `values` in `buckets` buckets of equal width between their min and max, each from its lower
  // limit up to its upper one excluded, except the last, which holds the max (one bucket when all
  // values are equal; none when there are no values).
  static Histogram Of(std::span<const float> values, int buckets = 30);
};
using Histograms = std::vector<std::pair<std::string, Histogram>>;

class EventWriter {
 public:
  // Creates `dir` if needed and opens a new event file in it.
  static absl::StatusOr<std::unique_ptr<EventWriter>> Create(const std::string& dir);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // Appends one Event with these scalars and histograms at `step` and flushes it to the file.
  absl::Status WriteSummary(std::int64_t step, const Scalars& scalars,
                            const Histograms& histograms = {});

  const std::string& path() const { return path_; }

 private:
  EventWriter(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  absl::Status WriteRecord(const std::string& bytes);

  std::FILE* file_;
  std::string path_;
};

// One event read back (tests and tools): its step, scalars and histograms; the version record
// has none.
struct ReadEvent {
  std::int64_t step = 0;
  std::string file_version;
  Scalars scalars;
  Histograms histograms;
};

// Reads every record of an event file, verifying both checksums of each (DataLoss otherwise).
absl::StatusOr<std::vector<ReadEvent>> ReadEventFile(const std::string& path);

}  // namespace taas::summary
