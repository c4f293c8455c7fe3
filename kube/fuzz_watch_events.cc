// libFuzzer target: a watch stream as the API server (or anything claiming to be one) sends it,
// through the same code as an informer: the decoder splits it into event lines (fed in pieces of a
// size the first input byte picks, as TCP delivers them), and each event is applied to a store
// with a secondary index and the managed-fields transform, once parsed and once packed. Nothing
// may crash, throw, or buffer a line past the limit, and the packed store must hold exactly what
// the parsed one holds.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/json_fields.h"
#include "taas/kube/client.h"
#include "taas/kube/informer.h"

namespace {

void Require(bool condition) {
  if (!condition) std::abort();
}

constexpr std::size_t kMaxLineBytes = 4096;

// The operator's kind of index: pods by the job label, read as any JSON type may be there.
std::vector<std::string> JobIndex(const nlohmann::json& object) {
  const nlohmann::json* meta = taas::json_fields::Object(object, "metadata");
  const nlohmann::json* labels = meta ? taas::json_fields::Object(*meta, "labels") : nullptr;
  if (labels == nullptr) return {};
  return {taas::json_fields::StringOr(*labels, "job-name", "")};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = static_cast<std::size_t>(data[0]) + 1;
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
  taas::kube::WatchDecoder decoder(kMaxLineBytes);
  taas::kube::Store store(JobIndex);
  taas::kube::Store packed(JobIndex, taas::kube::StoreMode::kPacked);
  std::string resource_version;
  std::string packed_version;
  const auto on_event = [&](const taas::kube::WatchEvent& event) {
    auto delta =
        taas::kube::ApplyWatchEvent(event, store, taas::kube::StripManagedFields, resource_version);
    if (delta.ok() && delta->has_value()) Require((*delta)->object != nullptr);
    auto packed_delta =
        taas::kube::ApplyWatchEvent(event, packed, taas::kube::StripManagedFields, packed_version);
    Require(packed_delta.ok() == delta.ok());
    if (delta.ok()) Require(packed_delta->has_value() == delta->has_value());
    return true;
  };
  for (std::size_t at = 0; at < stream.size(); at += piece) {
    bool stopped = false;
    const absl::Status fed = decoder.Feed(stream.substr(at, piece), on_event, &stopped);
    Require(decoder.buffered() <= kMaxLineBytes);
    Require(!stopped);
    if (!fed.ok()) break;
  }
  Require(packed.Size() == store.Size());
  for (const auto& object : store.List()) {
    Require(object != nullptr);
    const std::string key = taas::kube::ObjectKey(*object);
    const taas::kube::ObjectPtr same = packed.Get(key);
    Require(same != nullptr && *same == *object);
    for (const std::string& value : JobIndex(*object))
      Require(packed.ByIndex(value).size() == store.ByIndex(value).size());
  }
  return 0;
}
