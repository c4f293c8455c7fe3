// Where each variable lives across the parameter servers, like TensorFlow's
// replica_device_setter with GreedyLoadBalancingStrategy plus a min-size partitioner:
//   - variables of at least `partition_bytes` are split into one contiguous shard per PS (flat
//     element ranges, sizes differing by at most one element), so the largest tensors spread
//     their bytes and their update work over every PS;
//   - the others go whole, largest first (ties by name), each to the PS holding the fewest bytes
//     so far (ties to the lowest index); with lanes (client.h), only to lane 0 of each PS task,
//     so a model of small variables needs no call to the other lanes.
// Pure and deterministic: every replica computes the same placement from the same variables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace taas::ps {

struct Shard {
  int ps = 0;
  std::string name;         // Key on the PS: the variable name, or "<name>/part_<i>".
  std::int64_t offset = 0;  // First element of the variable held by this shard.
  std::int64_t size = 0;    // Elements.
};

struct VariableInfo {
  std::string name;
  std::int64_t size = 0;  // Elements (float32).
};

struct VariablePlacement {
  std::string name;
  std::int64_t size = 0;
  std::vector<Shard> shards;  // Ordered by offset; they cover [0, size) exactly.
};

// Placement of `variables` (same order in the result) over `num_ps` servers: PS tasks of `lanes`
// lanes each (num_ps counts lanes; PS index = task * lanes + lane).
std::vector<VariablePlacement> PlaceVariables(const std::vector<VariableInfo>& variables,
                                              int num_ps, std::int64_t partition_bytes,
                                              int lanes = 1);

// Bytes placed on each PS, for logs and tests.
std::vector<std::int64_t> BytesPerPs(const std::vector<VariablePlacement>& placement, int num_ps);

}  // namespace taas::ps
