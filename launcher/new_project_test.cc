#include "new_project.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "taas-new-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A small template in `dir`, named as the real one is.
void MakeTemplate(const fs::path& dir) {
  Write(dir / "CMakeLists.txt", "project(custom-model)\nadd_executable(custom-model main.cc)\n");
  Write(dir / "job.yaml",
        "metadata:\n  name: custom-model\ncommand: [/opt/taas/bin/custom-model]\n");
  Write(dir / "src" / "custom-model.h", "namespace custom_model {}\n");
  Write(dir / "build" / "CMakeCache.txt", "a build of the template in place\n");
  Write(dir / "run.sh", "#!/bin/sh\n");
  fs::permissions(dir / "run.sh", fs::perms::owner_exec, fs::perm_options::add);
}

TEST_CASE("project names: the job's rule, and a C++ namespace") {
  for (const char* good : {"mnist", "my-model", "a1", "resnet50-v2"}) {
    CAPTURE(good);
    CHECK(ValidateProjectName(good).ok());
  }
  for (const char* bad : {"", "MyModel", "1model", "model-", "my_model", "my model", "../x", "a--b",
                          "new", "static-cast"}) {
    CAPTURE(bad);
    const absl::Status status = ValidateProjectName(bad);
    CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(status.message()).find("project name \"" + std::string(bad) + "\"") == 0);
  }
  // Long enough that the evaluator's service name exceeds a DNS label.
  CHECK_FALSE(ValidateProjectName(std::string(60, 'a')).ok());
  CHECK(std::string(ValidateProjectName("My").message()).find("DNS-1035") != std::string::npos);
}

TEST_CASE("a project is the template with its names replaced") {
  TempDir tmp;
  MakeTemplate(tmp.path / "template");
  const fs::path project = tmp.path / "work" / "fmnist";
  REQUIRE(CreateProject((tmp.path / "template").string(), "fmnist-net", project.string()).ok());
  CHECK(Read(project / "CMakeLists.txt") ==
        "project(fmnist-net)\nadd_executable(fmnist-net main.cc)\n");
  CHECK(Read(project / "job.yaml") ==
        "metadata:\n  name: fmnist-net\ncommand: [/opt/taas/bin/fmnist-net]\n");
  CHECK(Read(project / "src" / "fmnist-net.h") == "namespace fmnist_net {}\n");
  CHECK_FALSE(fs::exists(project / "build"));
  CHECK(::access((project / "run.sh").c_str(), X_OK) == 0);

  // An empty folder will do; a folder with anything in it is never written.
  fs::create_directories(tmp.path / "empty");
  CHECK(CreateProject((tmp.path / "template").string(), "m", (tmp.path / "empty").string()).ok());
  const absl::Status again = CreateProject((tmp.path / "template").string(), "m", project.string());
  CHECK(again.code() == absl::StatusCode::kAlreadyExists);
  CHECK(std::string(again.message()).find("is not empty") != std::string::npos);
  CHECK(Read(project / "CMakeLists.txt").find("fmnist-net") != std::string::npos);
  Write(tmp.path / "file", "x");
  CHECK(CreateProject((tmp.path / "template").string(), "m", (tmp.path / "file").string()).code() ==
        absl::StatusCode::kAlreadyExists);
  // Not inside the template itself.
  CHECK(CreateProject((tmp.path / "template").string(), "m", (tmp.path / "template" / "m").string())
            .code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a template with something other than files and folders leaves nothing behind") {
  TempDir tmp;
  MakeTemplate(tmp.path / "template");
  fs::create_symlink("/etc/passwd", tmp.path / "template" / "zz-link");
  const fs::path project = tmp.path / "p";
  const absl::Status status =
      CreateProject((tmp.path / "template").string(), "p", project.string());
  CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(status.message()).find("zz-link") != std::string::npos);
  CHECK_FALSE(fs::exists(project));
}

TEST_CASE("the template is looked for in the prefix, then in the launcher's source tree") {
  TempDir tmp;
  // An installed SDK: <prefix>/bin/taas and <prefix>/share/taas/template.
  const fs::path prefix = tmp.path / "prefix";
  fs::create_directories(prefix / "bin");
  auto places = TemplatePlaces((prefix / "bin").string());
  REQUIRE(places.size() == 1);
  CHECK(places[0] == (prefix / "share" / "taas" / "template").string());
  auto missing = FindTemplate(places);
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(std::string(missing.status().message()).find(places[0]) != std::string::npos);
  MakeTemplate(prefix / "share" / "taas" / "template");
  CHECK(*FindTemplate(places) == places[0]);

  // A build tree: build/launcher/taas, build/CMakeCache.txt naming the source folder.
  const fs::path source = tmp.path / "src";
  MakeTemplate(source / "examples" / "custom-model");
  Write(tmp.path / "build" / "CMakeCache.txt",
        "CMAKE_BUILD_TYPE:STRING=Release\ntaas_SOURCE_DIR:STATIC=" + source.string() + "\n");
  fs::create_directories(tmp.path / "build" / "launcher");
  places = TemplatePlaces((tmp.path / "build" / "launcher").string());
  REQUIRE(places.size() == 2);
  CHECK(*FindTemplate(places) == (source / "examples" / "custom-model").string());
  CHECK(TemplatePlaces("").empty());
  CHECK(FindTemplate({}).status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("the next steps: README's commands, with this project's and this SDK's paths") {
  // An installed SDK: configure against it, build, test, run the job with the launcher that ran.
  CHECK(NextSteps({.project = "/home/u/my-model",
                   .launcher = "/home/u/taas-sdk/bin/taas",
                   .sdk_prefix = "/home/u/taas-sdk",
                   .build_tree = ""}) ==
        std::vector<std::string>{
            "cmake -S /home/u/my-model -B /home/u/my-model/build -G Ninja "
            "-DCMAKE_PREFIX_PATH=/home/u/taas-sdk",
            "cmake --build /home/u/my-model/build",
            "ctest --test-dir /home/u/my-model/build",
            "/home/u/taas-sdk/bin/taas run /home/u/my-model/job.yaml",
        });
  // A launcher in a build tree: the tree installs the SDK first, where README puts it.
  CHECK(NextSteps({.project = "/w/m",
                   .launcher = "/src/build/launcher/taas",
                   .sdk_prefix = "",
                   .build_tree = "/src/build"}) ==
        std::vector<std::string>{
            "cmake --build /src/build --target taas_sdk && cmake --install /src/build --prefix "
            "~/taas-sdk",
            "cmake -S /w/m -B /w/m/build -G Ninja -DCMAKE_PREFIX_PATH=~/taas-sdk",
            "cmake --build /w/m/build",
            "ctest --test-dir /w/m/build",
            "/src/build/launcher/taas run /w/m/job.yaml",
        });
  // Paths a shell would split or expand are quoted, a quote in them too.
  const std::vector<std::string> quoted = NextSteps({.project = "/home/u/my models/it's",
                                                     .launcher = "/opt/t$/taas",
                                                     .sdk_prefix = "/opt/t$",
                                                     .build_tree = ""});
  CHECK(quoted[0] ==
        "cmake -S '/home/u/my models/it'\\''s' -B '/home/u/my models/it'\\''s/build' "
        "-G Ninja -DCMAKE_PREFIX_PATH='/opt/t$'");
  CHECK(quoted[3] == "'/opt/t$/taas' run '/home/u/my models/it'\\''s/job.yaml'");
}

TEST_CASE("taas new: arguments") {
  CHECK(RunNew({"--help"}, "taas") == 0);
  CHECK(RunNew({}, "taas") == 2);
  CHECK(RunNew({"a", "b", "c"}, "taas") == 2);
  CHECK(RunNew({"Bad_Name"}, "taas") == 2);
  CHECK(RunNew({"--force", "x"}, "taas") == 2);
}

}  // namespace
}  // namespace taas::launcher
