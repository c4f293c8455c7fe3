// Where `taas run` finds the executable that a manifest's command `/opt/taas/bin/<name>` stands
// for. That folder exists only in the trainer image; on this machine the launcher looks where a
// developer keeps what they built, in a fixed order, and names every place it looked when none
// holds the executable.
#pragma once

#include <string>
#include <vector>

#include "taas/base/status.h"

namespace taas::launcher {

// Folders holding the executables directly, separated by ':' (searched after --bin-dir).
inline constexpr const char* kBinPathEnv = "TAAS_BIN_PATH";

// A folder to look in. A `recursive` folder is a build tree, searched below (the shallowest match
// wins); the others must hold the executable directly, as PATH's folders do.
struct BinaryPlace {
  std::string dir;
  bool recursive = false;
  // What put the folder on the list, for messages: "--bin-dir", "TAAS_BIN_PATH", "PATH", ...
  std::string origin;
};

// What the places are made of: the command line, the environment and where the files are.
struct BinarySearchInputs {
  std::string bin_dir;       // --bin-dir; "" when not given
  std::string bin_path_env;  // kBinPathEnv's value
  std::string build_dir;     // --build-dir, or the build tree the launcher sits in
  bool build_dir_given = false;
  std::string manifest_path;  // the job file
  std::string launcher_dir;   // the folder of the `taas` executable
  std::string path_env;       // PATH
};

// The inputs of a launcher run (`taas run`, `taas predict`): its flags and manifest, with
// TAAS_BIN_PATH and PATH from this process's environment.
BinarySearchInputs SearchInputsOfProcess(std::string bin_dir, std::string build_dir,
                                         bool build_dir_given, std::string manifest_path,
                                         std::string launcher_dir);

// The places in the order they are searched: --bin-dir; TAAS_BIN_PATH's folders; --build-dir;
// the nearest `build` folder beside the manifest or above it (a user's repository keeps its build
// there); the build tree the launcher sits in; the launcher's own folder (an installed SDK puts
// the launcher and the user's models in one `bin`); PATH's folders. A folder appears once (its
// first place wins); a build tree is a folder holding CMakeCache.txt, so an installed launcher
// never makes the launcher search a whole prefix such as /usr.
std::vector<BinaryPlace> BinaryPlaces(const BinarySearchInputs& inputs);

// The first executable named `name` in `places`. InvalidArgument when `name` is not a plain file
// name; NotFound naming every place looked in and how to fix it.
absl::StatusOr<std::string> LocateBinary(const std::vector<BinaryPlace>& places,
                                         const std::string& name);

// Finds an executable file named `name` under `dir` (recursively, shallowest first); "" when none.
std::string FindBinary(const std::string& dir, const std::string& name);

}  // namespace taas::launcher
