#include "taas/ps/placement.h"

#include <algorithm>
#include <numeric>

namespace taas::ps {

std::vector<VariablePlacement> PlaceVariables(const std::vector<VariableInfo>& variables,
                                              int num_ps, std::int64_t partition_bytes, int lanes) {
  std::vector<VariablePlacement> out(variables.size());
  std::vector<std::int64_t> load(static_cast<std::size_t>(std::max(num_ps, 1)), 0);
  std::vector<std::size_t> whole;
  for (std::size_t i = 0; i < variables.size(); ++i) {
    const auto& v = variables[i];
    out[i].name = v.name;
    out[i].size = v.size;
    const std::int64_t bytes = v.size * static_cast<std::int64_t>(sizeof(float));
    if (num_ps > 1 && bytes >= partition_bytes && v.size >= num_ps) {
      std::int64_t offset = 0;
      for (int p = 0; p < num_ps; ++p) {
        const std::int64_t size = v.size / num_ps + (p < v.size % num_ps ? 1 : 0);
        out[i].shards.push_back({p, v.name + "/part_" + std::to_string(p), offset, size});
        load[static_cast<std::size_t>(p)] += size * static_cast<std::int64_t>(sizeof(float));
        offset += size;
      }
    } else {
      whole.push_back(i);
    }
  }
  std::stable_sort(whole.begin(), whole.end(), [&](std::size_t a, std::size_t b) {
    if (variables[a].size != variables[b].size) return variables[a].size > variables[b].size;
    return variables[a].name < variables[b].name;
  });
  const int stride = std::max(lanes, 1);  // Whole variables: lane 0 of each task.
  for (std::size_t i : whole) {
    int p = 0;
    for (int q = stride; q < static_cast<int>(load.size()); q += stride) {
      if (load[static_cast<std::size_t>(q)] < load[static_cast<std::size_t>(p)]) p = q;
    }
    out[i].shards.push_back({p, variables[i].name, 0, variables[i].size});
    load[static_cast<std::size_t>(p)] +=
        variables[i].size * static_cast<std::int64_t>(sizeof(float));
  }
  return out;
}

std::vector<std::int64_t> BytesPerPs(const std::vector<VariablePlacement>& placement, int num_ps) {
  std::vector<std::int64_t> bytes(static_cast<std::size_t>(num_ps), 0);
  for (const auto& v : placement) {
    for (const auto& s : v.shards) {
      bytes[static_cast<std::size_t>(s.ps)] += s.size * static_cast<std::int64_t>(sizeof(float));
    }
  }
  return bytes;
}

}  // namespace taas::ps
