// libFuzzer target: a manifest as `taas run` reads it, parsed as YAML in a child process with
// limits (ParseYamlIsolated), then loaded as a TFJob. Any input gives documents or an error within
// the limits: yaml-cpp's own loops (docs/operator.md, "Limits") end as errors, never as a crash,
// a hang or exhausted memory of the caller. Coverage comes from the parent's side only (the child's
// is lost with it); the JSON side is fuzzed with coverage by fuzz_tfjob.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "manifest.h"
#include "taas/tfjob/serialization.h"
#include "taas/tfjob/validation.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  taas::IsolationLimits limits = taas::launcher::ManifestParseLimits();
  limits.max_memory_bytes = std::size_t{256} << 20;
  limits.deadline = std::chrono::seconds(5);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto documents = taas::launcher::ParseYamlIsolated(text, limits);
  if (!documents.ok()) {
    if (documents.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  for (const auto& document : *documents) {
    auto job = taas::tfjob::LoadTFJob(document);
    if (job.ok() && !taas::tfjob::LoadTFJob(taas::tfjob::TFJobToJson(*job)).ok()) std::abort();
  }
  return 0;
}
