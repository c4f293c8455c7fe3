#include "binary_locator.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;

// A scratch folder with an executable `model` in each place the launcher looks.
struct Tree {
  Tree() {
    std::string tmpl = (fs::temp_directory_path() / "taas-binary-locator-XXXXXX").string();
    root = ::mkdtemp(tmpl.data());
    for (const char* dir : {"bin-dir", "bin-path", "given-build/x", "repo/build/examples/m",
                            "repo/jobs", "taas-build/launcher", "taas-build/examples/m", "path"}) {
      fs::create_directories(root / dir);
    }
    for (const char* tree : {"given-build", "repo/build", "taas-build"}) {
      std::ofstream(root / tree / "CMakeCache.txt") << "";
    }
    std::ofstream(root / "repo" / "jobs" / "job.yaml") << "";
  }
  ~Tree() { fs::remove_all(root); }

  std::string Executable(const std::string& dir) const {
    const fs::path path = root / dir / "model";
    std::ofstream(path) << "#!/bin/sh\n";
    ::chmod(path.c_str(), 0755);
    return path.string();
  }
  BinarySearchInputs Inputs() const {
    return {.bin_dir = (root / "bin-dir").string(),
            .bin_path_env = ":" + (root / "none").string() + ":" + (root / "bin-path").string(),
            .build_dir = (root / "given-build").string(),
            .build_dir_given = true,
            .manifest_path = (root / "repo" / "jobs" / "job.yaml").string(),
            .launcher_dir = (root / "taas-build" / "launcher").string(),
            .path_env = (root / "path").string()};
  }

  fs::path root;
};

TEST_CASE("the places, in order: flags, TAAS_BIN_PATH, build trees, the launcher's folder, PATH") {
  Tree tree;
  auto places = BinaryPlaces(tree.Inputs());
  REQUIRE(places.size() == 7);
  CHECK(places[0].origin == "--bin-dir");
  CHECK(places[1].origin == "TAAS_BIN_PATH");
  CHECK(places[1].dir == (tree.root / "none").string());
  CHECK(places[2].dir == (tree.root / "bin-path").string());
  CHECK(places[3].origin == "--build-dir");
  CHECK(places[3].recursive);
  CHECK(places[4].origin == "the manifest's build tree");
  CHECK(places[4].dir == (tree.root / "repo" / "build").string());
  CHECK(places[4].recursive);
  CHECK(places[5].origin == "the launcher's folder");
  CHECK_FALSE(places[5].recursive);
  CHECK(places[6].origin == "PATH");

  // Without --build-dir the launcher's own build tree is searched, after the manifest's.
  BinarySearchInputs inputs = tree.Inputs();
  inputs.build_dir = (tree.root / "taas-build").string();
  inputs.build_dir_given = false;
  places = BinaryPlaces(inputs);
  REQUIRE(places.size() == 7);
  CHECK(places[3].origin == "the manifest's build tree");
  CHECK(places[4].origin == "the launcher's build tree");

  // An installed launcher (no CMakeCache.txt above it) never searches its whole prefix.
  inputs.build_dir = tree.root.string();
  places = BinaryPlaces(inputs);
  for (const BinaryPlace& place : places) CHECK(place.origin != "the launcher's build tree");

  // A folder listed twice is searched once, under its first name.
  inputs.build_dir = (tree.root / "repo" / "jobs" / ".." / "build").string();
  places = BinaryPlaces(inputs);
  int build_trees = 0;
  for (const BinaryPlace& place : places) build_trees += place.recursive ? 1 : 0;
  CHECK(build_trees == 1);
}

TEST_CASE("the first place holding an executable of that name wins") {
  Tree tree;
  const auto places = BinaryPlaces(tree.Inputs());
  const std::string path_model = tree.Executable("path");
  CHECK(*LocateBinary(places, "model") == path_model);
  const std::string launcher_model = tree.Executable("taas-build/launcher");
  CHECK(*LocateBinary(places, "model") == launcher_model);
  const std::string repo_model = tree.Executable("repo/build/examples/m");
  CHECK(*LocateBinary(places, "model") == repo_model);
  const std::string given_model = tree.Executable("given-build/x");
  CHECK(*LocateBinary(places, "model") == given_model);
  const std::string path_dir_model = tree.Executable("bin-path");
  CHECK(*LocateBinary(places, "model") == path_dir_model);
  // A file that is not executable is no candidate.
  std::ofstream(tree.root / "bin-dir" / "model") << "data";
  CHECK(*LocateBinary(places, "model") == path_dir_model);
  const std::string bin_dir_model = tree.Executable("bin-dir");
  CHECK(*LocateBinary(places, "model") == bin_dir_model);
  // Folders holding executables directly are not searched below.
  CHECK_FALSE(LocateBinary({{tree.root.string(), false, "PATH"}}, "model").ok());
}

TEST_CASE("nothing found names every place looked in; a name that is no file name is refused") {
  Tree tree;
  const auto missing = LocateBinary(BinaryPlaces(tree.Inputs()), "model");
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  const std::string r = tree.root.string();
  CHECK(missing.status().message() ==
        "no executable named model in --bin-dir " + r + "/bin-dir; TAAS_BIN_PATH " + r +
            "/none; TAAS_BIN_PATH " + r + "/bin-path; --build-dir " + r +
            "/given-build (and below); the manifest's build tree " + r +
            "/repo/build (and below); the launcher's folder " + r + "/taas-build/launcher; PATH " +
            r + "/path. Build it, or say where it is with --bin-dir DIR or " +
            "TAAS_BIN_PATH=DIR[:DIR...]");
  CHECK(std::string(LocateBinary({}, "model").status().message())
            .starts_with("no executable named model in any folder."));
  for (const char* name : {"", ".", "..", "../model", "sub/model", "/model"}) {
    CAPTURE(name);
    CHECK(LocateBinary(BinaryPlaces(tree.Inputs()), name).status().code() ==
          absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace taas::launcher
