// For the runtime's tests: a fresh folder under the system's temporary directory, removed with
// everything in it when the object goes.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace taas::runtime_testing {

struct TempDir {
  std::filesystem::path path;
  // `name` goes into the folder's name ("taas-<name>-XXXXXX"), to tell whose a leftover is.
  explicit TempDir(const std::string& name) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("taas-" + name + "-XXXXXX")).string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string Sub(const std::string& name) const { return (path / name).string(); }
};

}  // namespace taas::runtime_testing
