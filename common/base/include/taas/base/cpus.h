// How many CPUs this process may keep busy: its affinity mask, capped by the CPU limit of its
// cgroup (a pod's `resources.limits.cpu`). std::thread::hardware_concurrency counts every CPU of
// the machine, so threads sized by it oversubscribe a container and stall on throttling.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace taas {

struct AvailableCpus {
  int cpus = 1;  // at least 1
  // What set the number, for the startup line: "cgroup cpu limit" or "cpu affinity".
  std::string limited_by;
};

// The CPUs available to this process; `root` is where /proc and /sys are found (tests pass a
// folder of their own). Unreadable or malformed cgroup files mean no limit.
AvailableCpus ReadAvailableCpus(const std::string& root = "/");

// The pure parts, for tests.
// The process's cgroup paths from /proc/self/cgroup: cgroup v2's unified path ("0::/a/b") and
// the v1 path of the `cpu` controller ("4:cpu,cpuacct:/a/b"); "" for what is absent.
struct CgroupPaths {
  std::string unified;
  std::string v1_cpu;
};
CgroupPaths ParseProcCgroup(std::string_view text);
// cgroup v2 cpu.max ("max 100000", "250000 100000"): the limit in CPUs, nullopt for none.
std::optional<double> ParseCpuMax(std::string_view text);
// cgroup v1 cpu.cfs_quota_us and cpu.cfs_period_us ("-1" quota: none).
std::optional<double> ParseCfsQuota(std::string_view quota, std::string_view period);
// The CPUs to use: the affinity count capped by the limit rounded down (1.5 CPUs of quota keep one
// thread busy without throttling), at least 1.
AvailableCpus CombineCpuLimits(int affinity_cpus, std::optional<double> limit);

}  // namespace taas
