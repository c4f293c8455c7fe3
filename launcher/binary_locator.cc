#include "binary_locator.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBuildFolderName = "build";
constexpr const char* kBuildTreeMarker = "CMakeCache.txt";

bool IsBuildTree(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kBuildTreeMarker, ec);
}

// The nearest `build` tree in the manifest's folder or one of its parents; "" when none.
std::string NearestBuildTree(const std::string& manifest_path) {
  std::error_code ec;
  fs::path dir = fs::absolute(manifest_path, ec).parent_path();
  if (ec) return "";
  while (true) {
    if (IsBuildTree(dir / kBuildFolderName)) return (dir / kBuildFolderName).string();
    if (!dir.has_relative_path()) return "";  // the root
    dir = dir.parent_path();
  }
}

bool IsExecutableFile(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

// A place's folder, as searched, for messages: "PATH /usr/bin".
std::string Describe(const BinaryPlace& place) {
  return place.origin + " " + place.dir + (place.recursive ? " (and below)" : "");
}

}  // namespace

BinarySearchInputs SearchInputsOfProcess(std::string bin_dir, std::string build_dir,
                                         bool build_dir_given, std::string manifest_path,
                                         std::string launcher_dir) {
  const auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value ? value : "");
  };
  return {.bin_dir = std::move(bin_dir),
          .bin_path_env = env(kBinPathEnv),
          .build_dir = std::move(build_dir),
          .build_dir_given = build_dir_given,
          .manifest_path = std::move(manifest_path),
          .launcher_dir = std::move(launcher_dir),
          .path_env = env("PATH")};
}

std::vector<BinaryPlace> BinaryPlaces(const BinarySearchInputs& in) {
  std::vector<BinaryPlace> places;
  std::set<std::string> seen;
  const auto add = [&](const std::string& dir, bool recursive, const std::string& origin) {
    if (dir.empty()) return;
    std::error_code ec;
    std::string key = fs::weakly_canonical(dir, ec).string();
    if (ec) key = dir;
    if (!seen.insert(key).second) return;
    places.push_back({dir, recursive, origin});
  };
  add(in.bin_dir, false, "--bin-dir");
  for (absl::string_view dir : absl::StrSplit(in.bin_path_env, ':', absl::SkipEmpty())) {
    add(std::string(dir), false, kBinPathEnv);
  }
  if (in.build_dir_given) add(in.build_dir, true, "--build-dir");
  add(NearestBuildTree(in.manifest_path), true, "the manifest's build tree");
  if (!in.build_dir_given && IsBuildTree(in.build_dir)) {
    add(in.build_dir, true, "the launcher's build tree");
  }
  add(in.launcher_dir, false, "the launcher's folder");
  for (absl::string_view dir : absl::StrSplit(in.path_env, ':', absl::SkipEmpty())) {
    add(std::string(dir), false, "PATH");
  }
  return places;
}

absl::StatusOr<std::string> LocateBinary(const std::vector<BinaryPlace>& places,
                                         const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError("\"" + name +
                                      "\" is not a file name: a command must name an executable "
                                      "directly in /opt/taas/bin");
  }
  std::vector<std::string> looked;
  for (const BinaryPlace& place : places) {
    if (place.recursive) {
      if (std::string found = FindBinary(place.dir, name); !found.empty()) return found;
    } else if (const fs::path candidate = fs::path(place.dir) / name; IsExecutableFile(candidate)) {
      return candidate.string();
    }
    looked.push_back(Describe(place));
  }
  return absl::NotFoundError(
      "no executable named " + name + " in " +
      (looked.empty() ? std::string("any folder") : absl::StrJoin(looked, "; ")) +
      ". Build it, or say where it is with --bin-dir DIR or " + kBinPathEnv + "=DIR[:DIR...]");
}

std::string FindBinary(const std::string& dir, const std::string& name) {
  std::error_code ec;
  std::string best;
  std::size_t best_depth = 0;
  for (auto it =
           fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->path().filename() != name || !IsExecutableFile(it->path())) continue;
    const auto depth = static_cast<std::size_t>(it.depth());
    if (best.empty() || depth < best_depth) {
      best = it->path().string();
      best_depth = depth;
    }
  }
  return best;
}

}  // namespace taas::launcher
