// Reads of user-supplied JSON (TFJobs, pods, nodes, API bodies, TF_CONFIG, watch events) that
// tolerate any JSON type in any field. nlohmann::json's own `value()`, `at()` and `get<T>()` throw
// on a type they did not expect; nothing outside this header calls them on outside input.
//
// Two flavours:
//   - lenient (Find, Object, Array, String, Int, Bool): absent or of another type -> nullptr or
//     nullopt; for display and for objects the API server already validated (pods, nodes);
//   - strict (Optional*): absent -> nullopt; present with another type -> InvalidArgument naming
//     the field's path, the expected and the found type; for validation of what a user wrote.
// None of these functions throws or allocates in proportion to the input beyond the copied value.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "taas/base/status.h"

namespace taas::json_fields {

using Json = nlohmann::json;

// "object", "array", "string", "integer", "number", "boolean" or "null".
std::string_view TypeName(const Json& value);

// The member `key` of `object`; nullptr when `object` is not an object or has no such member.
const Json* Find(const Json& object, std::string_view key);
// The member `key` of `object` of any type; a null value when Find finds none. For walking paths
// of display code: MemberOrNull(MemberOrNull(pod, "spec"), "nodeName").
const Json& MemberOrNull(const Json& object, std::string_view key);
// The member if it is an object (resp. array); nullptr otherwise.
const Json* Object(const Json& object, std::string_view key);
const Json* Array(const Json& object, std::string_view key);

std::optional<std::string> String(const Json& object, std::string_view key);
std::string StringOr(const Json& object, std::string_view key, std::string_view fallback = "");
// An integer, or a float with an integral value, that fits int64; nullopt otherwise.
std::optional<std::int64_t> Int(const Json& object, std::string_view key);
std::optional<std::int64_t> AsInt(const Json& value);
std::optional<bool> Bool(const Json& object, std::string_view key);

// Strict reads; `path` is the field's full name for the message, e.g.
// "spec.tfReplicaSpecs.Worker.replicas": "... must be an integer, got string".
absl::StatusOr<std::optional<std::string>> OptionalString(const Json& object, std::string_view key,
                                                          std::string_view path);
absl::StatusOr<std::optional<std::int64_t>> OptionalInt(const Json& object, std::string_view key,
                                                        std::string_view path);
absl::StatusOr<std::optional<bool>> OptionalBool(const Json& object, std::string_view key,
                                                 std::string_view path);
// Present and not an object (resp. array) -> InvalidArgument; absent -> nullptr.
absl::StatusOr<const Json*> OptionalObject(const Json& object, std::string_view key,
                                           std::string_view path);
absl::StatusOr<const Json*> OptionalArray(const Json& object, std::string_view key,
                                          std::string_view path);

}  // namespace taas::json_fields
