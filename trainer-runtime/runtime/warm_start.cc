#include "taas/runtime/warm_start.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>

#include "taas/checkpoint/checkpoint.h"

namespace taas {
namespace {

constexpr std::string_view kSafetensorsSuffix = ".safetensors";

// The checkpoint `from` names: a model dir's newest that verifies, one prefix, or a safetensors
// file from anywhere.
absl::StatusOr<checkpoint::Checkpoint> Open(const std::string& from) {
  if (from.empty()) {
    return absl::InvalidArgumentError(
        "warm start: ckpt_to_initialize_from is empty: name a model dir, a checkpoint prefix or a "
        ".safetensors file");
  }
  std::error_code ec;
  if (std::filesystem::is_directory(from, ec)) {
    std::vector<std::string> skipped;
    TAAS_ASSIGN_OR_RETURN(std::optional<checkpoint::Checkpoint> latest,
                          checkpoint::LoadLatest(from, &skipped));
    if (!latest) {
      return absl::NotFoundError("warm start: model dir " + from +
                                 " holds no checkpoint (no `checkpoint` file listing one)");
    }
    return std::move(*latest);
  }
  if (from.ends_with(kSafetensorsSuffix)) return checkpoint::LoadSafetensors(from);
  auto loaded = checkpoint::Load(from);
  if (absl::IsNotFound(loaded.status())) {
    return absl::NotFoundError("warm start: " + from +
                               " is neither a model dir, a checkpoint prefix nor a .safetensors "
                               "file (" +
                               std::string(loaded.status().message()) + ")");
  }
  return loaded;
}

// The compiled patterns of `field`, or InvalidArgument naming the one that does not compile.
absl::StatusOr<std::vector<std::regex>> Compile(const std::vector<std::string>& patterns,
                                                const std::string& field) {
  std::vector<std::regex> out;
  for (const std::string& pattern : patterns) {
    try {
      out.emplace_back(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError("warm start: " + field + ": \"" + pattern +
                                        "\" is not a regular expression: " + e.what());
    }
  }
  return out;
}

// TF's re.match: a pattern matches from the start of the name.
bool Matches(const std::vector<std::regex>& patterns, const std::string& name) {
  return std::any_of(patterns.begin(), patterns.end(), [&name](const std::regex& pattern) {
    return std::regex_search(name, pattern, std::regex_constants::match_continuous);
  });
}

}  // namespace

absl::StatusOr<int> WarmStartVariables(const WarmStartSettings& settings,
                                       const std::vector<Variable*>& variables) {
  TAAS_ASSIGN_OR_RETURN(std::vector<std::regex> patterns,
                        Compile(settings.vars_to_warm_start, "vars_to_warm_start"));
  TAAS_ASSIGN_OR_RETURN(std::vector<std::regex> transpose,
                        Compile(settings.vars_to_transpose, "vars_to_transpose"));
  std::vector<Variable*> chosen;
  for (Variable* v : variables) {
    if (Matches(patterns, v->name)) chosen.push_back(v);
  }
  TAAS_ASSIGN_OR_RETURN(checkpoint::Checkpoint ckpt, Open(settings.ckpt_to_initialize_from));
  const std::string source = settings.ckpt_to_initialize_from.ends_with(kSafetensorsSuffix)
                                 ? "file " + settings.ckpt_to_initialize_from
                                 : "checkpoint " + ckpt.path;
  // The source's names, mapped to the model's, for the lookup to know which are transposed.
  std::map<std::string, bool> transposed_source;
  for (const Variable* v : chosen) {
    const auto renamed = settings.var_name_to_prev_var_name.find(v->name);
    const std::string& prev =
        renamed == settings.var_name_to_prev_var_name.end() ? v->name : renamed->second;
    const bool transposed = Matches(transpose, v->name);
    const auto [it, added] = transposed_source.emplace(prev, transposed);
    if (!added && it->second != transposed) {
      // One source tensor read both ways: which one the user meant is not ours to guess.
      return absl::InvalidArgumentError("warm start: " + source + " tensor " + prev +
                                        " seeds variables both transposed and not (" + v->name +
                                        " is " + (transposed ? "" : "not ") +
                                        "matched by vars_to_transpose)");
    }
  }
  // Every variable is checked before any is written: a failed warm start leaves the initial
  // values whole.
  TAAS_ASSIGN_OR_RETURN(std::vector<std::string> names,
                        MapToSource(settings.var_name_to_prev_var_name, chosen, source,
                                    [&](const std::string& name) -> std::optional<SourceTensor> {
                                      const checkpoint::Entry* entry = ckpt.Find(name);
                                      if (!entry) return std::nullopt;
                                      return SourceTensor{
                                          static_cast<std::int64_t>(entry->values.size()),
                                          entry->shape, transposed_source[name]};
                                    }));
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const checkpoint::Entry& entry = *ckpt.Find(names[i]);
    float* out = chosen[i]->value.data();
    if (!transposed_source[names[i]]) {
      std::copy(entry.values.begin(), entry.values.end(), out);
      continue;
    }
    // The source is [rows, cols] (checked by MapToSource); the variable is [cols, rows].
    const std::int64_t rows = (*entry.shape)[0], cols = (*entry.shape)[1];
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) out[c * rows + r] = entry.values[r * cols + c];
    }
  }
  return static_cast<int>(chosen.size());
}

InitFn WarmStart(WarmStartSettings settings) {
  return [settings = std::move(settings)](Session& session) -> absl::Status {
    // The state that is not trained is warm-started by name as the variables are: a frozen
    // trunk with its BatchNorm statistics.
    std::vector<Variable*> both = session.variables();
    both.insert(both.end(), session.state().begin(), session.state().end());
    TAAS_ASSIGN_OR_RETURN(int copied, WarmStartVariables(settings, both));
    session.logger().Info("warm start: variables copied from a checkpoint",
                          {{"from", settings.ckpt_to_initialize_from},
                           {"variables", copied},
                           {"of", static_cast<std::int64_t>(both.size())}});
    return absl::OkStatus();
  };
}

}  // namespace taas
