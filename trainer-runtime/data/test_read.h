// Private to the data module's tests: every example of a record data set, decoded in order on one
// thread, as the readers' tests compare them with what their fixtures' writers wrote.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "taas/base/status.h"
#include "taas/data/batch.h"
#include "taas/data/records.h"

namespace taas::data::testing {

// Every example of every part, in order, or the first error (a decode error named by its part).
inline absl::StatusOr<std::vector<DecodedExample>> ReadAllExamples(const RecordDataset& dataset,
                                                                   const DecodeFn& decode) {
  std::vector<DecodedExample> examples;
  for (std::int64_t part = 0; part < dataset.num_parts(); ++part) {
    TAAS_ASSIGN_OR_RETURN(auto reader, dataset.Open(part));
    Record record;
    for (;;) {
      TAAS_ASSIGN_OR_RETURN(bool got, reader->Next(record));
      if (!got) break;
      absl::StatusOr<DecodedExample> example = decode(record.bytes);
      if (!example.ok()) {
        return absl::Status(example.status().code(), dataset.part_name(part) + ": " +
                                                         std::string(example.status().message()));
      }
      examples.push_back(*std::move(example));
    }
  }
  return examples;
}

// Every example's one feature, batch after batch to the stream's end: the ids the sharding tests'
// one-feature data sets carry.
inline absl::StatusOr<std::vector<int>> FirstFeatures(BatchStream& stream) {
  std::vector<int> ids;
  for (;;) {
    TAAS_ASSIGN_OR_RETURN(auto batch, stream.NextBatch());
    if (!batch.has_value()) return ids;
    for (std::int64_t i = 0; i < batch->images.shape()[0]; ++i) {
      ids.push_back(static_cast<int>(batch->images.data()[i]));
    }
  }
}

// The error that ends a stream expected to fail, after every batch before it; OK when the stream
// ends without one.
inline absl::Status StreamError(BatchStream& stream) {
  for (;;) {
    auto batch = stream.NextBatch();
    if (!batch.ok()) return batch.status();
    if (!batch->has_value()) return absl::OkStatus();
  }
}

}  // namespace taas::data::testing
