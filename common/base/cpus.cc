#include "taas/base/cpus.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace taas {
namespace {

namespace fs = std::filesystem;

// cgroup files are a few bytes; a larger one is not what it should be.
constexpr std::size_t kMaxCgroupFileBytes = 4096;
// A limit far above any machine is no limit (and keeps the arithmetic finite).
constexpr double kMaxCpus = 1 << 20;

std::string ReadSmallFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string text(kMaxCgroupFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text.size() > kMaxCgroupFileBytes ? "" : text;
}

// Debian's Abseil has its own string_view; the header speaks std::string_view.
absl::string_view Absl(std::string_view text) { return {text.data(), text.size()}; }

std::optional<long long> ParsePositive(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

std::optional<double> Min(std::optional<double> a, std::optional<double> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

// A cgroup path relative to a hierarchy's mount, and each of its ancestors (a parent's limit
// binds its children too), the path itself first.
std::vector<fs::path> SelfAndAncestors(const fs::path& mount, const std::string& path) {
  std::vector<fs::path> dirs;
  fs::path relative = fs::path(path).relative_path().lexically_normal();
  if (relative.string().starts_with("..")) return dirs;  // hostile: never leave the mount
  while (true) {
    dirs.push_back(mount / relative);
    if (relative.empty() || relative == ".") break;
    relative = relative.parent_path();
  }
  return dirs;
}

int AffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace

CgroupPaths ParseProcCgroup(std::string_view text) {
  CgroupPaths paths;
  for (absl::string_view line : absl::StrSplit(Absl(text), '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    if (parts[0] == "0" && parts[1].empty()) {
      paths.unified = std::string(parts[2]);
      continue;
    }
    for (absl::string_view controller : absl::StrSplit(parts[1], ',')) {
      if (controller == "cpu") paths.v1_cpu = std::string(parts[2]);
    }
  }
  return paths;
}

std::optional<double> ParseCpuMax(std::string_view text) {
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(Absl(text)), ' ', absl::SkipEmpty());
  if (fields.size() != 2) return std::nullopt;
  const auto quota = ParsePositive(fields[0]);  // "max" fails: no limit
  const auto period = ParsePositive(fields[1]);
  if (!quota || !period) return std::nullopt;
  return std::min(kMaxCpus, static_cast<double>(*quota) / static_cast<double>(*period));
}

std::optional<double> ParseCfsQuota(std::string_view quota, std::string_view period) {
  const auto q = ParsePositive(Absl(quota));  // -1: no limit
  const auto p = ParsePositive(Absl(period));
  if (!q || !p) return std::nullopt;
  return std::min(kMaxCpus, static_cast<double>(*q) / static_cast<double>(*p));
}

AvailableCpus CombineCpuLimits(int affinity_cpus, std::optional<double> limit) {
  const int affinity = std::max(1, affinity_cpus);
  if (limit && std::floor(*limit) < affinity) {
    return {std::max(1, static_cast<int>(std::floor(*limit))), "cgroup cpu limit"};
  }
  return {affinity, "cpu affinity"};
}

AvailableCpus ReadAvailableCpus(const std::string& root) {
  const fs::path base(root);
  const CgroupPaths paths = ParseProcCgroup(ReadSmallFile(base / "proc/self/cgroup"));
  std::optional<double> limit;
  if (!paths.unified.empty()) {
    for (const fs::path& dir : SelfAndAncestors(base / "sys/fs/cgroup", paths.unified)) {
      limit = Min(limit, ParseCpuMax(ReadSmallFile(dir / "cpu.max")));
    }
  }
  if (!paths.v1_cpu.empty()) {
    // Distributions mount the v1 cpu controller under either name.
    for (const char* mount : {"sys/fs/cgroup/cpu", "sys/fs/cgroup/cpu,cpuacct"}) {
      for (const fs::path& dir : SelfAndAncestors(base / mount, paths.v1_cpu)) {
        limit = Min(limit, ParseCfsQuota(ReadSmallFile(dir / "cpu.cfs_quota_us"),
                                         ReadSmallFile(dir / "cpu.cfs_period_us")));
      }
    }
  }
  return CombineCpuLimits(AffinityCpus(), limit);
}

}  // namespace taas
