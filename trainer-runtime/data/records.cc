#include "taas/data/records.h"

#include <utility>

namespace taas::data {
namespace {

class MemoryRecordReader : public RecordReader {
 public:
  explicit MemoryRecordReader(const std::vector<std::string>& records) : records_(records) {}

  absl::StatusOr<bool> Next(Record& record) override {
    if (next_ >= records_.size()) return false;
    record.bytes = records_[next_];
    record.index = static_cast<std::int64_t>(next_);
    record.offset = offset_;
    offset_ += records_[next_].size();
    ++next_;
    return true;
  }

 private:
  const std::vector<std::string>& records_;  // owned by the data set, which outlives its readers
  std::size_t next_ = 0;
  std::uint64_t offset_ = 0;
};

}  // namespace

MemoryRecordDataset::MemoryRecordDataset(std::vector<std::vector<std::string>> parts)
    : parts_(std::move(parts)) {}

std::int64_t MemoryRecordDataset::num_parts() const {
  return static_cast<std::int64_t>(parts_.size());
}

std::string MemoryRecordDataset::part_name(std::int64_t part) const {
  return "memory part " + std::to_string(part);
}

absl::StatusOr<std::unique_ptr<RecordReader>> MemoryRecordDataset::Open(std::int64_t part) const {
  if (part < 0 || part >= num_parts()) {
    return absl::OutOfRangeError("memory records: part " + std::to_string(part) +
                                 " is not in [0, " + std::to_string(num_parts()) + ")");
  }
  return std::make_unique<MemoryRecordReader>(parts_[static_cast<std::size_t>(part)]);
}

absl::StatusOr<ShardPlan> PlanShard(std::int64_t num_parts, int num_shards, int shard_index) {
  if (num_parts < 1) {
    return absl::InvalidArgumentError("shard plan: the data set has no parts (files)");
  }
  if (num_shards < 1 || shard_index < 0 || shard_index >= num_shards) {
    return absl::InvalidArgumentError(
        "shard plan: shard_index must be in [0, num_shards), got shard_index " +
        std::to_string(shard_index) + " of num_shards " + std::to_string(num_shards));
  }
  ShardPlan plan;
  if (num_parts >= num_shards) {
    for (std::int64_t part = shard_index; part < num_parts; part += num_shards) {
      plan.parts.push_back(part);
    }
    return plan;
  }
  for (std::int64_t part = 0; part < num_parts; ++part) plan.parts.push_back(part);
  plan.record_stride = num_shards;
  plan.record_offset = shard_index;
  return plan;
}

}  // namespace taas::data
