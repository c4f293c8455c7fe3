#include "manifest.h"

#include <fstream>

#include "taas/tfjob/serialization.h"

namespace taas::launcher {

IsolationLimits ManifestParseLimits() {
  IsolationLimits limits;
  limits.max_memory_bytes = std::size_t{1} << 30;
  limits.deadline = std::chrono::seconds(20);
  // The JSON of at most kMaxYamlNodes values: a few bytes each, and the text's own size.
  limits.max_output_bytes = std::size_t{256} << 20;
  return limits;
}

absl::StatusOr<std::vector<nlohmann::json>> ParseYamlIsolated(std::string_view yaml,
                                                              const IsolationLimits& limits) {
  auto parsed = RunIsolated(
      [yaml]() -> absl::StatusOr<std::string> {
        TAAS_ASSIGN_OR_RETURN(std::vector<nlohmann::json> documents, tfjob::YamlToJson(yaml));
        return nlohmann::json(std::move(documents)).dump();
      },
      limits, "the YAML parser");
  if (!parsed.ok()) {
    if (parsed.status().code() == absl::StatusCode::kInvalidArgument) return parsed.status();
    // A limit, not a syntax error the parser could name: the YAML is still the user's to fix.
    return absl::InvalidArgumentError(
        "cannot read the YAML: " + std::string(parsed.status().message()) +
        " (is a quoted string or a bracket left open?)");
  }
  nlohmann::json documents = nlohmann::json::parse(*parsed, nullptr, /*allow_exceptions=*/false);
  if (!documents.is_array()) return absl::InternalError("the YAML parser's answer is not JSON");
  return documents.get<std::vector<nlohmann::json>>();
}

absl::StatusOr<nlohmann::json> ReadManifest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path + ": cannot read the file");
  // One byte more than the limit tells a file at the limit from one over it.
  std::string text(tfjob::kMaxYamlBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return absl::DataLossError(path + ": reading the file failed");
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > tfjob::kMaxYamlBytes) {
    return absl::InvalidArgumentError(path + ": over the maximum of " +
                                      std::to_string(tfjob::kMaxYamlBytes) +
                                      " bytes for a manifest");
  }
  auto documents = ParseYamlIsolated(text);
  if (!documents.ok())
    return absl::InvalidArgumentError(path + ": " + std::string(documents.status().message()));
  if (documents->size() != 1) {
    return absl::InvalidArgumentError(path + ": expected exactly one TFJob document, found " +
                                      std::to_string(documents->size()));
  }
  return std::move(documents->front());
}

}  // namespace taas::launcher
