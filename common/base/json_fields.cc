#include "taas/base/json_fields.h"

#include <cmath>
#include <limits>

namespace taas::json_fields {
namespace {

absl::Status WrongType(std::string_view path, std::string_view expected, const Json& found) {
  std::string message(path);
  message.append(" must be ").append(expected).append(", got ").append(TypeName(found));
  return absl::InvalidArgumentError(message);
}

}  // namespace

std::string_view TypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::object:
      return "object";
    case Json::value_t::array:
      return "array";
    case Json::value_t::string:
      return "string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "integer";
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::null:
      return "null";
    default:
      return "binary";
  }
}

const Json* Find(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const Json& MemberOrNull(const Json& object, std::string_view key) {
  static const Json kNull;  // immutable: a value to refer to, not state
  const Json* member = Find(object, key);
  return member != nullptr ? *member : kNull;
}

const Json* Object(const Json& object, std::string_view key) {
  const Json* member = Find(object, key);
  return member != nullptr && member->is_object() ? member : nullptr;
}

const Json* Array(const Json& object, std::string_view key) {
  const Json* member = Find(object, key);
  return member != nullptr && member->is_array() ? member : nullptr;
}

std::optional<std::string> String(const Json& object, std::string_view key) {
  const Json* member = Find(object, key);
  if (member == nullptr || !member->is_string()) return std::nullopt;
  return member->get_ref<const std::string&>();
}

std::string StringOr(const Json& object, std::string_view key, std::string_view fallback) {
  std::optional<std::string> value = String(object, key);
  return value ? *std::move(value) : std::string(fallback);
}

std::optional<std::int64_t> AsInt(const Json& value) {
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    return value.get<std::int64_t>();
  }
  if (value.is_number_unsigned()) {
    const std::uint64_t unsigned_value = value.get<std::uint64_t>();
    if (unsigned_value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(unsigned_value);
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    // 2^63 is exactly representable; anything at or above it does not fit.
    if (!std::isfinite(d) || d != std::trunc(d) || d < -9223372036854775808.0 ||
        d >= 9223372036854775808.0) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

std::optional<std::int64_t> Int(const Json& object, std::string_view key) {
  const Json* member = Find(object, key);
  return member == nullptr ? std::nullopt : AsInt(*member);
}

std::optional<bool> Bool(const Json& object, std::string_view key) {
  const Json* member = Find(object, key);
  if (member == nullptr || !member->is_boolean()) return std::nullopt;
  return member->get<bool>();
}

absl::StatusOr<std::optional<std::string>> OptionalString(const Json& object, std::string_view key,
                                                          std::string_view path) {
  const Json* member = Find(object, key);
  if (member == nullptr) return std::nullopt;
  if (!member->is_string()) return WrongType(path, "a string", *member);
  return std::optional<std::string>(member->get_ref<const std::string&>());
}

absl::StatusOr<std::optional<std::int64_t>> OptionalInt(const Json& object, std::string_view key,
                                                        std::string_view path) {
  const Json* member = Find(object, key);
  if (member == nullptr) return std::nullopt;
  std::optional<std::int64_t> value = AsInt(*member);
  if (!value) {
    if (member->is_number()) {
      std::string message(path);
      message.append(" must be an integer that fits 64 bits, got ").append(member->dump());
      return absl::InvalidArgumentError(message);
    }
    return WrongType(path, "an integer", *member);
  }
  return value;
}

absl::StatusOr<std::optional<bool>> OptionalBool(const Json& object, std::string_view key,
                                                 std::string_view path) {
  const Json* member = Find(object, key);
  if (member == nullptr) return std::nullopt;
  if (!member->is_boolean()) return WrongType(path, "a boolean", *member);
  return std::optional<bool>(member->get<bool>());
}

absl::StatusOr<const Json*> OptionalObject(const Json& object, std::string_view key,
                                           std::string_view path) {
  const Json* member = Find(object, key);
  if (member == nullptr) return nullptr;
  if (!member->is_object()) return WrongType(path, "an object", *member);
  return member;
}

absl::StatusOr<const Json*> OptionalArray(const Json& object, std::string_view key,
                                          std::string_view path) {
  const Json* member = Find(object, key);
  if (member == nullptr) return nullptr;
  if (!member->is_array()) return WrongType(path, "an array", *member);
  return member;
}

}  // namespace taas::json_fields
