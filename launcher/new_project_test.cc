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

TEST_CASE("an engine's project is the template with engines/<engine> laid over it") {
  TempDir tmp;
  const fs::path templ = tmp.path / "template";
  MakeTemplate(templ);
  Write(templ / "engines" / "torch" / "CMakeLists.txt",
        "project(custom-model)\nfind_package(taas COMPONENTS torch)\n");
  Write(templ / "engines" / "torch" / "src" / "net.h", "namespace custom_model::net {}\n");

  // The built-in engine: the template as it is, without engines/.
  const fs::path builtin = tmp.path / "builtin";
  REQUIRE(CreateProject(templ.string(), "fm", builtin.string(), kBuiltinEngine).ok());
  CHECK(Read(builtin / "CMakeLists.txt") == "project(fm)\nadd_executable(fm main.cc)\n");
  CHECK_FALSE(fs::exists(builtin / "engines"));
  CHECK_FALSE(fs::exists(builtin / "src" / "net.h"));

  // torch: the overlay's files replace the template's and add to them, names replaced; the rest
  // is the template's.
  const fs::path torch = tmp.path / "torch";
  REQUIRE(CreateProject(templ.string(), "fm-torch", torch.string(), kTorchEngine).ok());
  CHECK(Read(torch / "CMakeLists.txt") ==
        "project(fm-torch)\nfind_package(taas COMPONENTS torch)\n");
  CHECK(Read(torch / "src" / "net.h") == "namespace fm_torch::net {}\n");
  CHECK(Read(torch / "job.yaml") ==
        "metadata:\n  name: fm-torch\ncommand: [/opt/taas/bin/fm-torch]\n");
  CHECK(Read(torch / "src" / "fm-torch.h") == "namespace fm_torch {}\n");
  CHECK(::access((torch / "run.sh").c_str(), X_OK) == 0);
  CHECK_FALSE(fs::exists(torch / "engines"));
  CHECK_FALSE(fs::exists(torch / "build"));

  // An SDK built without the engine has no overlay for it: refused, nothing made.
  fs::remove_all(templ / "engines");
  const fs::path refused = tmp.path / "refused";
  const absl::Status status = CreateProject(templ.string(), "fm", refused.string(), kTorchEngine);
  CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(status.message()).find("has no torch engine") != std::string::npos);
  CHECK_FALSE(fs::exists(refused));
  CHECK(CreateProject(templ.string(), "fm", refused.string(), "tensorflow").code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK_FALSE(fs::exists(refused));
}

TEST_CASE("engines: builtin and torch") {
  CHECK(ValidateEngine("builtin").ok());
  CHECK(ValidateEngine("torch").ok());
  for (const char* bad : {"", "Torch", "tensorflow", "../torch"}) {
    CAPTURE(bad);
    const absl::Status status = ValidateEngine(bad);
    CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(status.message()) ==
          "--engine must be builtin (taas's own layers) or torch (a torch::nn model), got \"" +
              std::string(bad) + "\"");
  }
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
  CHECK(RunNew({"x", "--engine"}, "taas") == 2);
  CHECK(RunNew({"x", "--engine", "gpu"}, "taas") == 2);
  CHECK(RunNew({"--engine=", "x"}, "taas") == 2);
}

}  // namespace
}  // namespace taas::launcher
