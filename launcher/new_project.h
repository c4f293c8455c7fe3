// `taas new NAME [DIR] [--engine builtin|torch]`: a new model project in DIR (default ./NAME),
// copied from the template (examples/custom-model in the source tree, <prefix>/share/taas/template
// once installed) with the template's name replaced by NAME, ready to build against the installed
// SDK.
#pragma once

#include <string>
#include <vector>

#include "taas/base/status.h"

namespace taas::launcher {

// What the template calls itself: its CMake project, binary, job and image ("custom-model") and
// its C++ namespace ("custom_model"). `taas new` replaces both, in file contents and file names.
inline constexpr const char* kTemplateName = "custom-model";
inline constexpr const char* kTemplateNamespace = "custom_model";

// The model engines a project can be made for. The template as it is uses the built-in one
// (taas::nn's layers); the template's folder engines/<engine>/ holds what another engine's project
// has instead (its CMakeLists.txt, model, unit test, README), laid over the template's files; the
// rest (main.cc, job.yaml, Dockerfile) is the same for every engine. engines/ itself is never
// copied into a project.
inline constexpr const char* kBuiltinEngine = "builtin";
inline constexpr const char* kTorchEngine = "torch";  // a torch::nn model (taas::torch)
inline constexpr const char* kTemplateEngines = "engines";

// OK for kBuiltinEngine and kTorchEngine; else InvalidArgument naming both.
absl::Status ValidateEngine(const std::string& engine);

// OK when NAME can name the job (a TFJob name: a DNS-1035 label short enough for the replicas'
// service names), the binary and the C++ namespace (NAME with '-' as '_': no C++ keyword, no
// "--"); else InvalidArgument naming the rule NAME breaks.
absl::Status ValidateProjectName(const std::string& name);

// Where the template may be, in the order looked at: <launcher_dir>/../share/taas/template (an
// installed SDK), then examples/custom-model of the source tree whose build tree holds the
// launcher (its CMakeCache.txt names the source folder).
std::vector<std::string> TemplatePlaces(const std::string& launcher_dir);

// The first of `places` holding a template (a CMakeLists.txt and a job.yaml); NotFound naming
// every place looked at.
absl::StatusOr<std::string> FindTemplate(const std::vector<std::string>& places);

// Copies `template_dir` into `dir` with the names replaced (kTemplateName -> name,
// kTemplateNamespace -> name with '_' for '-'), then, for an engine other than the built-in one,
// the template's engines/<engine>/ over it (FailedPrecondition when the template has none: an SDK
// built without that engine). Regular files and folders only (a `build` folder in the template
// is skipped); `dir` must not exist or be an empty folder (AlreadyExists otherwise). On failure
// nothing of `dir` that this call created is left.
absl::Status CreateProject(const std::string& template_dir, const std::string& name,
                           const std::string& dir, const std::string& engine = kBuiltinEngine);

// Where a new project's next steps point, each an absolute path.
struct ProjectPlaces {
  std::string project;   // the project's folder
  std::string launcher;  // the `taas` that created it, which then runs its job
  // The installed SDK's prefix; "" when the launcher runs from a build tree, which then installs
  // the SDK first (into kSuggestedSdkPrefix).
  std::string sdk_prefix;
  std::string build_tree;  // that build tree; "" for an installed SDK
};

// Where the next steps install the SDK when it is not installed yet: README's choice. A shell
// expands the `~` of `--prefix ~/taas-sdk`, CMake that of `-DCMAKE_PREFIX_PATH=~/taas-sdk`.
inline constexpr const char* kSuggestedSdkPrefix = "~/taas-sdk";

// The commands that build the project, run its unit test and run its job, one a line, each ready
// to paste into a shell (a path that needs it is quoted): README's "Write your own model" steps.
std::vector<std::string> NextSteps(const ProjectPlaces& places);

// What `taas new --help` prints.
std::string NewUsage();

// `taas new ARGS...` (the arguments after `new`); `self_path` is argv[0], a fallback for finding
// the launcher's own folder. Returns the process exit code: 0 done, 2 bad arguments, 1 failure.
int RunNew(const std::vector<std::string>& args, const std::string& self_path);

}  // namespace taas::launcher
