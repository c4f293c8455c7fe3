#include "taas/base/cpus.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace taas {
namespace {

namespace fs = std::filesystem;

TEST_CASE("/proc/self/cgroup: the unified path and the v1 cpu controller's") {
  auto paths = ParseProcCgroup("0::/kubepods/pod1/c1\n");
  CHECK(paths.unified == "/kubepods/pod1/c1");
  CHECK(paths.v1_cpu.empty());
  paths = ParseProcCgroup("12:memory:/m\n4:cpu,cpuacct:/docker/abc\n0::/\n");
  CHECK(paths.v1_cpu == "/docker/abc");
  CHECK(paths.unified == "/");
  paths = ParseProcCgroup("3:cpuset:/x\n2:cpuacct:/y\ngarbage\n::\n");
  CHECK(paths.v1_cpu.empty());
  CHECK(paths.unified.empty());
}

TEST_CASE("cpu.max and CFS quota files: a limit in CPUs, or none") {
  CHECK(*ParseCpuMax("250000 100000\n") == doctest::Approx(2.5));
  CHECK(*ParseCpuMax("50000 100000") == doctest::Approx(0.5));
  CHECK_FALSE(ParseCpuMax("max 100000\n"));
  for (const char* bad : {"", "100000", "0 100000", "-5 100000", "1 0", "1 2 3", "1e9 100000",
                          "99999999999999999999999 1"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseCpuMax(bad));
  }
  CHECK(*ParseCfsQuota("200000\n", "100000\n") == doctest::Approx(2));
  CHECK_FALSE(ParseCfsQuota("-1\n", "100000\n"));
  CHECK_FALSE(ParseCfsQuota("", ""));
  // A limit beyond any machine stays finite.
  CHECK(*ParseCpuMax("9223372036854775807 1") <= double(1 << 20));
}

TEST_CASE("the CPUs to use: affinity capped by the limit, rounded down, at least one") {
  CHECK(CombineCpuLimits(8, std::nullopt).cpus == 8);
  CHECK(CombineCpuLimits(8, std::nullopt).limited_by == "cpu affinity");
  CHECK(CombineCpuLimits(8, 2.5).cpus == 2);
  CHECK(CombineCpuLimits(8, 2.5).limited_by == "cgroup cpu limit");
  CHECK(CombineCpuLimits(8, 0.5).cpus == 1);
  CHECK(CombineCpuLimits(2, 16).cpus == 2);
  CHECK(CombineCpuLimits(0, std::nullopt).cpus == 1);
}

// A fake root with /proc/self/cgroup and cgroup files.
struct FakeRoot {
  FakeRoot() {
    std::string tmpl = (fs::temp_directory_path() / "taas-cpus-XXXXXX").string();
    root = ::mkdtemp(tmpl.data());
  }
  ~FakeRoot() { fs::remove_all(root); }
  void Write(const std::string& path, const std::string& text) const {
    fs::create_directories((root / path).parent_path());
    std::ofstream(root / path) << text;
  }
  fs::path root;
};

TEST_CASE("the limit is read from the process's cgroup and its ancestors, v2 and v1") {
  const int affinity = ReadAvailableCpus("/nonexistent").cpus;
  REQUIRE(affinity >= 1);
  {
    FakeRoot fake;
    fake.Write("proc/self/cgroup", "0::/kubepods/pod1/c1\n");
    fake.Write("sys/fs/cgroup/kubepods/pod1/c1/cpu.max", "max 100000\n");
    fake.Write("sys/fs/cgroup/kubepods/pod1/cpu.max", "50000 100000\n");  // the pod's limit
    const AvailableCpus cpus = ReadAvailableCpus(fake.root.string());
    CHECK(cpus.cpus == 1);
    CHECK(cpus.limited_by == (affinity > 1 ? "cgroup cpu limit" : "cpu affinity"));
  }
  {
    FakeRoot fake;
    fake.Write("proc/self/cgroup", "4:cpu,cpuacct:/docker/abc\n");
    fake.Write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "100000\n");
    fake.Write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
    CHECK(ReadAvailableCpus(fake.root.string()).cpus == 1);
  }
  {
    // A path that climbs out of the mount is ignored, as is an oversized file.
    FakeRoot fake;
    fake.Write("proc/self/cgroup", "0::/../../etc\n");
    fake.Write("sys/fs/cgroup/cpu.max", std::string(10000, '1') + " 100000\n");
    CHECK(ReadAvailableCpus(fake.root.string()).cpus == affinity);
  }
}

}  // namespace
}  // namespace taas
