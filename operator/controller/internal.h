// Small helpers shared by the controller's source files: API paths and object metadata.
// Private to the controller.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace taas::controller::internal {

// How long a created child that the informer has not shown yet is expected before giving up.
inline constexpr std::chrono::seconds kExpectationTimeout{60};

inline std::string CorePath(const std::string& ns, const std::string& resource) {
  return ns.empty() ? "/api/v1/" + resource : "/api/v1/namespaces/" + ns + "/" + resource;
}

inline std::uint64_t ResourceVersion(const nlohmann::json& object) {
  try {
    return std::stoull(object["metadata"].value("resourceVersion", "0"));
  } catch (const std::exception&) {
    return 0;
  }
}

inline std::string MetaString(const nlohmann::json& object, const char* field) {
  const auto it = object.find("metadata");
  if (it == object.end() || !it->is_object()) return "";
  return it->value(field, "");
}

inline bool HasDeletionTimestamp(const nlohmann::json& object) {
  const auto it = object.find("metadata");
  return it != object.end() && it->is_object() && it->contains("deletionTimestamp") &&
         !(*it)["deletionTimestamp"].is_null();
}

}  // namespace taas::controller::internal
