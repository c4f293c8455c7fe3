#include "new_project.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "taas/tfjob/tfjob.h"
#include "taas/tfjob/validation.h"

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;

// A template file is source text: anything larger is not the template.
constexpr std::uintmax_t kMaxTemplateFileBytes = 1 << 20;
constexpr const char* kSourceTemplate = "examples/custom-model";
constexpr const char* kInstalledTemplate = "../share/taas/template";
constexpr std::string_view kSourceDirKey = "taas_SOURCE_DIR:STATIC=";

// C++20's keywords and alternative tokens: NAME with '_' for '-' becomes a namespace.
const std::set<std::string_view>& CppKeywords() {
  static const std::set<std::string_view> keywords = {
      "alignas",       "alignof",     "and",
      "and_eq",        "asm",         "auto",
      "bitand",        "bitor",       "bool",
      "break",         "case",        "catch",
      "char",          "char8_t",     "char16_t",
      "char32_t",      "class",       "compl",
      "concept",       "const",       "consteval",
      "constexpr",     "constinit",   "const_cast",
      "continue",      "co_await",    "co_return",
      "co_yield",      "decltype",    "default",
      "delete",        "do",          "double",
      "dynamic_cast",  "else",        "enum",
      "explicit",      "export",      "extern",
      "false",         "float",       "for",
      "friend",        "goto",        "if",
      "inline",        "int",         "long",
      "mutable",       "namespace",   "new",
      "noexcept",      "not",         "not_eq",
      "nullptr",       "operator",    "or",
      "or_eq",         "private",     "protected",
      "public",        "register",    "reinterpret_cast",
      "requires",      "return",      "short",
      "signed",        "sizeof",      "static",
      "static_assert", "static_cast", "struct",
      "switch",        "template",    "this",
      "thread_local",  "throw",       "true",
      "try",           "typedef",     "typeid",
      "typename",      "union",       "unsigned",
      "using",         "virtual",     "void",
      "volatile",      "wchar_t",     "while",
      "xor",           "xor_eq"};
  return keywords;
}

std::string NamespaceOf(const std::string& name) { return absl::StrReplaceAll(name, {{"-", "_"}}); }

bool IsTemplate(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "CMakeLists.txt", ec) &&
         fs::is_regular_file(dir / "job.yaml", ec);
}

// A CMake build tree: the folder holding CMakeCache.txt and the source folder that names.
struct BuildTree {
  std::string dir;
  std::string source_dir;
};

// The build tree holding `dir` (its nearest CMakeCache.txt above, when it names its source).
std::optional<BuildTree> BuildTreeAbove(fs::path dir) {
  std::error_code ec;
  while (!dir.empty()) {
    const fs::path cache = dir / "CMakeCache.txt";
    if (fs::is_regular_file(cache, ec)) {
      std::ifstream in(cache);
      for (std::string line; std::getline(in, line);) {
        if (line.starts_with(kSourceDirKey)) {
          return BuildTree{dir.string(), line.substr(kSourceDirKey.size())};
        }
      }
      return std::nullopt;
    }
    if (!dir.has_relative_path()) return std::nullopt;  // the root
    dir = dir.parent_path();
  }
  return std::nullopt;
}

// The launcher's own path: /proc/self/exe, else argv[0] resolved; "" when neither resolves.
std::string LauncherPath(const std::string& self_path) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) self = fs::canonical(self_path, ec);
  return ec ? "" : self.string();
}

// `path` as one shell word: as it is when a shell would read it so, else in single quotes.
std::string ShellWord(const std::string& path) {
  constexpr std::string_view kPlain =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,:@%=";
  if (!path.empty() && path.find_first_not_of(kPlain) == std::string::npos) return path;
  return "'" + absl::StrReplaceAll(path, {{"'", "'\\''"}}) + "'";
}

// `dir` made absolute, without a trailing '/'.
std::string AbsoluteDir(const std::string& dir) {
  std::error_code ec;
  fs::path path = fs::absolute(dir, ec).lexically_normal();
  if (!path.has_filename() && path.has_parent_path() && path != path.root_path()) {
    path = path.parent_path();
  }
  return path.string();
}

// Copies `from` into `to` (over what is there), names replaced; a folder named `skip` directly
// in `from` is left out.
absl::Status CopyTree(const fs::path& from, const fs::path& to, const std::string& name,
                      const std::string& skip) {
  const std::vector<std::pair<std::string, std::string>> renames = {
      {kTemplateName, name}, {kTemplateNamespace, NamespaceOf(name)}};
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) return absl::InternalError("cannot create " + to.string() + ": " + ec.message());
  for (auto it = fs::recursive_directory_iterator(from, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path source = it->path();
    const fs::path relative = fs::relative(source, from, ec);
    if (ec) break;
    const fs::path target = to / absl::StrReplaceAll(relative.string(), renames);
    const fs::file_status status = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_directory(status)) {
      // A build of the template in place is not the template; engines/ is laid over it.
      if (source.filename() == "build" || (it.depth() == 0 && source.filename() == skip)) {
        it.disable_recursion_pending();
        continue;
      }
      fs::create_directories(target, ec);
      if (ec) return absl::InternalError("cannot create " + target.string() + ": " + ec.message());
      continue;
    }
    if (!fs::is_regular_file(status)) {
      return absl::FailedPreconditionError("template " + from.string() + ": " + source.string() +
                                           " is not a regular file or folder");
    }
    const std::uintmax_t size = fs::file_size(source, ec);
    if (ec || size > kMaxTemplateFileBytes) {
      return absl::FailedPreconditionError("template " + from.string() + ": " + source.string() +
                                           " is not a readable file of at most 1 MiB");
    }
    std::ifstream in(source, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) return absl::InternalError("cannot read " + source.string());
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out << absl::StrReplaceAll(text, renames);
    out.close();
    if (!out) return absl::InternalError("cannot write " + target.string());
    fs::permissions(target, fs::status(source, ec).permissions(), ec);
    if (ec) return absl::InternalError("cannot set the permissions of " + target.string());
  }
  if (ec) return absl::InternalError("cannot read template " + from.string() + ": " + ec.message());
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateEngine(const std::string& engine) {
  if (engine == kBuiltinEngine || engine == kTorchEngine) return absl::OkStatus();
  return absl::InvalidArgumentError("--engine must be " + std::string(kBuiltinEngine) +
                                    " (taas's own layers) or " + kTorchEngine +
                                    " (a torch::nn model), got \"" + engine + "\"");
}

absl::Status ValidateProjectName(const std::string& name) {
  const auto bad = [&](const std::string& rule) {
    return absl::InvalidArgumentError("project name \"" + name + "\" " + rule);
  };
  // The TFJob's own rule, with the longest replica name the template's job has (evaluator-0).
  tfjob::TFJob job;
  job.metadata.name = name;
  job.spec.replica_specs[tfjob::ReplicaType::kEvaluator].replicas = 1;
  for (const tfjob::FieldError& error : tfjob::Validate(job)) {
    if (error.field == "metadata.name") {
      return bad(error.message + " (it names the job, the binary and the CMake project)");
    }
  }
  if (name.find("--") != std::string::npos) {
    return bad("must not hold \"--\" (its C++ namespace would be a reserved identifier)");
  }
  if (CppKeywords().contains(NamespaceOf(name))) {
    return bad("must not be a C++ keyword (with '_' for '-', it names the model's namespace)");
  }
  return absl::OkStatus();
}

std::vector<std::string> TemplatePlaces(const std::string& launcher_dir) {
  std::vector<std::string> places;
  if (launcher_dir.empty()) return places;
  places.push_back((fs::path(launcher_dir) / kInstalledTemplate).lexically_normal().string());
  if (const std::optional<BuildTree> tree = BuildTreeAbove(launcher_dir)) {
    places.push_back((fs::path(tree->source_dir) / kSourceTemplate).string());
  }
  return places;
}

absl::StatusOr<std::string> FindTemplate(const std::vector<std::string>& places) {
  for (const std::string& place : places) {
    if (IsTemplate(place)) return place;
  }
  return absl::NotFoundError(
      "no project template (a folder with CMakeLists.txt and job.yaml) in " +
      (places.empty() ? std::string("any folder: the launcher cannot find its own folder")
                      : absl::StrJoin(places, "; ")) +
      ". Install the SDK (cmake --install BUILD --prefix PREFIX) and run PREFIX/bin/taas");
}

absl::Status CreateProject(const std::string& template_dir, const std::string& name,
                           const std::string& dir, const std::string& engine) {
  TAAS_RETURN_IF_ERROR(ValidateProjectName(name));
  TAAS_RETURN_IF_ERROR(ValidateEngine(engine));
  if (!IsTemplate(template_dir)) {
    return absl::NotFoundError("no project template (CMakeLists.txt and job.yaml) in " +
                               template_dir);
  }
  std::error_code ec;
  const fs::path overlay = fs::path(template_dir) / kTemplateEngines / engine;
  if (engine != kBuiltinEngine && !fs::is_directory(overlay, ec)) {
    return absl::FailedPreconditionError(
        "the template " + template_dir + " has no " + engine + " engine (" + overlay.string() +
        "): this SDK was built without it; install an SDK built with the " + engine +
        " engine (docs/trainer-runtime.md, \"Building against the SDK\") or use --engine " +
        kBuiltinEngine);
  }
  const fs::path target(dir);
  // A project inside the template would be copied into itself.
  const fs::path inside =
      fs::weakly_canonical(target, ec).lexically_relative(fs::weakly_canonical(template_dir, ec));
  if (!ec && !inside.empty() && *inside.begin() != "..") {
    return absl::InvalidArgumentError(dir + " is inside the template " + template_dir +
                                      ": choose a folder outside it");
  }
  const bool existed = fs::exists(fs::symlink_status(target, ec));
  if (existed) {
    if (!fs::is_directory(target, ec)) {
      return absl::AlreadyExistsError(dir + " exists and is not a folder: choose another folder");
    }
    if (!fs::is_empty(target, ec) || ec) {
      return absl::AlreadyExistsError(dir +
                                      " is not empty: choose a new folder (taas new NAME "
                                      "DIR) or remove it");
    }
  }
  absl::Status copied = CopyTree(template_dir, target, name, kTemplateEngines);
  if (copied.ok() && engine != kBuiltinEngine) copied = CopyTree(overlay, target, name, "");
  if (!copied.ok()) {
    // Leave nothing half made: the folder as it was before (absent, or empty).
    if (existed) {
      for (const auto& entry : fs::directory_iterator(target, ec)) fs::remove_all(entry.path(), ec);
    } else {
      fs::remove_all(target, ec);
    }
  }
  return copied;
}

std::vector<std::string> NextSteps(const ProjectPlaces& places) {
  const std::string project = ShellWord(places.project);
  const std::string build = ShellWord(places.project + "/build");
  std::vector<std::string> steps;
  std::string prefix = ShellWord(places.sdk_prefix);
  if (!places.build_tree.empty()) {
    const std::string tree = ShellWord(places.build_tree);
    prefix = kSuggestedSdkPrefix;
    steps.push_back("cmake --build " + tree + " --target taas_sdk && cmake --install " + tree +
                    " --prefix " + prefix);
  }
  steps.push_back("cmake -S " + project + " -B " + build +
                  " -G Ninja -DCMAKE_PREFIX_PATH=" + prefix);
  steps.push_back("cmake --build " + build);
  steps.push_back("ctest --test-dir " + build);
  steps.push_back(ShellWord(places.launcher) + " run " + ShellWord(places.project + "/job.yaml"));
  return steps;
}

std::string NewUsage() {
  return "usage: taas new NAME [DIR] [--engine builtin|torch]\n"
         "  Creates a model project NAME in DIR (default ./NAME) from the SDK's template: a\n"
         "  CMakeLists.txt using find_package(taas), a model, its unit test, a job.yaml and a\n"
         "  Dockerfile. NAME names the job, the binary and the CMake project: lower-case letters,\n"
         "  digits and '-', starting with a letter.\n"
         "  --engine builtin  (the default) the model is written with taas's own layers "
         "(taas::nn)\n"
         "  --engine torch    the model is a LibTorch torch::nn module (taas::torch); the SDK "
         "must\n"
         "                    have been built with the torch engine";
}

int RunNew(const std::vector<std::string>& args, const std::string& self_path) {
  std::vector<std::string> positional;
  std::string engine = kBuiltinEngine;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      std::printf("%s\n", NewUsage().c_str());
      return 0;
    }
    if (arg == "--engine" || arg.starts_with("--engine=")) {
      if (arg == "--engine" && i + 1 == args.size()) {
        std::fprintf(stderr, "taas new: --engine needs a value\n%s\n", NewUsage().c_str());
        return 2;
      }
      engine = arg == "--engine" ? args[++i] : arg.substr(std::string_view("--engine=").size());
      if (absl::Status valid = ValidateEngine(engine); !valid.ok()) {
        std::fprintf(stderr, "taas new: %s\n", std::string(valid.message()).c_str());
        return 2;
      }
      continue;
    }
    if (arg.starts_with("-")) {
      std::fprintf(stderr, "taas new: unknown option %s\n%s\n", arg.c_str(), NewUsage().c_str());
      return 2;
    }
    positional.push_back(arg);
  }
  if (positional.empty() || positional.size() > 2) {
    std::fprintf(stderr, "taas new: %s\n%s\n",
                 positional.empty() ? "no project name" : "too many arguments", NewUsage().c_str());
    return 2;
  }
  const std::string& name = positional[0];
  const std::string dir = positional.size() > 1 ? positional[1] : name;
  if (absl::Status valid = ValidateProjectName(name); !valid.ok()) {
    std::fprintf(stderr, "taas new: %s\n", std::string(valid.message()).c_str());
    return 2;
  }
  const std::string launcher = LauncherPath(self_path);
  const std::string launcher_dir =
      launcher.empty() ? "" : fs::path(launcher).parent_path().string();
  auto template_dir = FindTemplate(TemplatePlaces(launcher_dir));
  absl::Status created = template_dir.status();
  if (created.ok()) created = CreateProject(*template_dir, name, dir, engine);
  if (!created.ok()) {
    std::fprintf(stderr, "taas new: %s\n", std::string(created.message()).c_str());
    return 1;
  }
  // The SDK's prefix is the launcher's parent folder when the template is the installed one;
  // otherwise the template is the source tree's, and the build tree holding the launcher installs
  // the SDK first.
  ProjectPlaces places;
  places.project = AbsoluteDir(dir);
  places.launcher = launcher;
  if (*template_dir == TemplatePlaces(launcher_dir).front()) {
    places.sdk_prefix = fs::path(launcher_dir).parent_path().string();
  } else if (const std::optional<BuildTree> tree = BuildTreeAbove(launcher_dir)) {
    places.build_tree = tree->dir;
  }
  std::printf(
      "created %s (%s, the %s engine) from %s\nnext steps%s:\n", places.project.c_str(),
      name.c_str(), engine.c_str(), template_dir->c_str(),
      places.build_tree.empty() ? "" : " (the first installs the SDK, in a prefix you choose)");
  for (const std::string& step : NextSteps(places)) std::printf("  %s\n", step.c_str());
  return 0;
}

}  // namespace taas::launcher
