#include "taas/runtime/warm_start.h"

#include <filesystem>
#include <optional>
#include <regex>

#include "taas/checkpoint/checkpoint.h"

namespace taas {
namespace {

// The checkpoint `from` names: a model dir's newest that verifies, or one prefix.
absl::StatusOr<checkpoint::Checkpoint> Open(const std::string& from) {
  if (from.empty()) {
    return absl::InvalidArgumentError(
        "warm start: ckpt_to_initialize_from is empty: name a model dir or a checkpoint prefix");
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
  if (!std::filesystem::exists(from + ".index", ec)) {
    return absl::NotFoundError("warm start: " + from +
                               " is neither a model dir nor a checkpoint prefix (no " + from +
                               ".index)");
  }
  return checkpoint::Load(from);
}

}  // namespace

absl::StatusOr<int> WarmStartVariables(const WarmStartSettings& settings,
                                       const std::vector<Variable*>& variables) {
  std::vector<std::regex> patterns;
  for (const std::string& pattern : settings.vars_to_warm_start) {
    try {
      patterns.emplace_back(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError("warm start: vars_to_warm_start: \"" + pattern +
                                        "\" is not a regular expression: " + e.what());
    }
  }
  std::vector<Variable*> chosen;
  for (Variable* v : variables) {
    for (const std::regex& pattern : patterns) {
      if (std::regex_search(v->name, pattern, std::regex_constants::match_continuous)) {
        chosen.push_back(v);
        break;
      }
    }
  }
  TAAS_ASSIGN_OR_RETURN(checkpoint::Checkpoint ckpt, Open(settings.ckpt_to_initialize_from));
  // Every variable is checked before any is written: a failed warm start leaves the initial
  // values whole.
  TAAS_ASSIGN_OR_RETURN(
      std::vector<std::string> names,
      MapToSource(
          settings.var_name_to_prev_var_name, chosen, "checkpoint " + ckpt.path,
          [&ckpt](const std::string& name) -> std::optional<SourceTensor> {
            const checkpoint::Entry* entry = ckpt.Find(name);
            if (!entry) return std::nullopt;
            return SourceTensor{static_cast<std::int64_t>(entry->values.size()), entry->shape};
          }));
  std::vector<const checkpoint::Entry*> entries;
  for (const std::string& name : names) entries.push_back(ckpt.Find(name));
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    std::copy(entries[i]->values.begin(), entries[i]->values.end(), chosen[i]->value.data());
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
