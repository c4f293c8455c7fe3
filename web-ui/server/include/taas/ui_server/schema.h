// One field list per API row type, from which both its JSON and the front end's TypeScript type
// are written, so that the C++ struct, the JSON the API answers and web-ui/src/api_types.ts
// cannot drift apart (api_types.h generates that file; a test compares it with this list).
//
// A row type describes itself by specialising Describe, with TAAS_SCHEMA_ROW (below):
//
//   TAAS_SCHEMA_ROW(EventRow, Field("type", &EventRow::type), Field("count", &EventRow::count));
//
// (the TypeScript interface takes the type's name), and an enumeration written as a string
// specialises DescribeEnum with TAAS_SCHEMA_ENUM: each enumerator with its spelling. Members may be
// strings, booleans, numbers, described rows and enumerations, std::optional (null when unset, or
// left out with Unset::kOmit), std::vector, and nlohmann::json (a Kubernetes object passed through
// as it is). Pure: no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace taas::ui_server::schema {

// How an unset std::optional member is written: as null, or not at all (TypeScript `key?:`).
enum class Unset { kNull, kOmit };

template <typename Owner, typename Member>
struct Field {
  // `type_script`, when given, names the member's TypeScript type instead of its C++ type's (a
  // string that holds one of a TypeScript union's values, say).
  constexpr Field(std::string_view json_name, Member Owner::*pointer,
                  Unset when_unset = Unset::kNull, std::string_view type_script = {})
      : name(json_name), member(pointer), unset(when_unset), type_script_name(type_script) {}

  std::string_view name;
  Member Owner::*member;
  Unset unset;
  std::string_view type_script_name;
};

template <typename T>
struct Describe;
template <typename E>
struct DescribeEnum;

template <typename T>
concept Described = requires {
  Describe<T>::kName;
  Describe<T>::kFields;
};
template <typename E>
concept DescribedEnum = std::is_enum_v<E> && requires {
  DescribeEnum<E>::kName;
  DescribeEnum<E>::kValues;
};

namespace internal {
template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};
template <typename T>
inline constexpr bool kAlwaysFalse = false;
}  // namespace internal

// The spelling of an enumerator ("" for a value the description does not list).
template <DescribedEnum E>
std::string_view Name(E value) {
  for (const auto& [enumerator, name] : DescribeEnum<E>::kValues) {
    if (enumerator == value) return name;
  }
  return "";
}

template <typename T>
nlohmann::json ToJson(const T& value);

namespace internal {
template <typename Owner, typename Member>
void WriteField(nlohmann::json& out, const Owner& row, const Field<Owner, Member>& field) {
  const Member& value = row.*field.member;
  if constexpr (IsOptional<Member>::value) {
    if (!value && field.unset == Unset::kOmit) return;
  }
  out[std::string(field.name)] = ToJson(value);
}
}  // namespace internal

template <typename T>
nlohmann::json ToJson(const T& value) {
  if constexpr (DescribedEnum<T>) {
    return std::string(Name(value));
  } else if constexpr (Described<T>) {
    nlohmann::json out = nlohmann::json::object();
    std::apply([&](const auto&... field) { (internal::WriteField(out, value, field), ...); },
               Describe<T>::kFields);
    return out;
  } else if constexpr (internal::IsOptional<T>::value) {
    return value ? ToJson(*value) : nlohmann::json(nullptr);
  } else if constexpr (internal::IsVector<T>::value) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : value) out.push_back(ToJson(item));
    return out;
  } else {
    return nlohmann::json(value);  // strings, booleans, numbers, JSON
  }
}

// The TypeScript type of a member of C++ type T.
template <typename T>
std::string TypeScriptType() {
  if constexpr (DescribedEnum<T>) {
    return std::string(DescribeEnum<T>::kName);
  } else if constexpr (Described<T>) {
    return std::string(Describe<T>::kName);
  } else if constexpr (internal::IsOptional<T>::value) {
    return TypeScriptType<typename T::value_type>() + " | null";
  } else if constexpr (internal::IsVector<T>::value) {
    const std::string item = TypeScriptType<typename T::value_type>();
    return (item.find(' ') == std::string::npos ? item : "(" + item + ")") + "[]";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "string";
  } else if constexpr (std::is_same_v<T, bool>) {
    return "boolean";
  } else if constexpr (std::is_arithmetic_v<T>) {
    return "number";
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    return "Record<string, unknown>";  // a Kubernetes object, passed through
  } else {
    static_assert(internal::kAlwaysFalse<T>, "no TypeScript type for this member");
  }
}

// `export interface Name {\n  key: type;\n  ...\n}\n`
template <Described T>
std::string TypeScriptInterface() {
  std::string out = "export interface " + std::string(Describe<T>::kName) + " {\n";
  auto member = [&]<typename Owner, typename Member>(const Field<Owner, Member>& field) {
    std::string type = TypeScriptType<Member>();
    std::string name(field.name);
    if constexpr (internal::IsOptional<Member>::value) {
      if (field.unset == Unset::kOmit) {
        name += "?";
        type = TypeScriptType<typename Member::value_type>();
      }
    }
    if (!field.type_script_name.empty()) type = std::string(field.type_script_name);
    out += "  " + name + ": " + type + ";\n";
  };
  std::apply([&](const auto&... field) { (member(field), ...); }, Describe<T>::kFields);
  return out + "}\n";
}

// `export type Name = 'a' | 'b';\n`
template <DescribedEnum E>
std::string TypeScriptUnion() {
  std::string out = "export type " + std::string(DescribeEnum<E>::kName) + " =";
  const char* separator = " ";
  for (const auto& [enumerator, name] : DescribeEnum<E>::kValues) {
    out += separator + std::string("'") + std::string(name) + "'";
    separator = " | ";
  }
  return out + ";\n";
}

// An enumerator with its spelling, for DescribeEnum::kValues.
template <typename E>
constexpr std::pair<E, std::string_view> Spelled(E value, std::string_view name) {
  return {value, name};
}

}  // namespace taas::ui_server::schema

// Describe<Type> (written inside namespace taas::ui_server::schema) with the given Field(...)s;
// the TypeScript interface takes the type's name.
#define TAAS_SCHEMA_ROW(Type, ...)                                \
  template <>                                                     \
  struct Describe<Type> {                                         \
    static constexpr std::string_view kName = #Type;              \
    static constexpr auto kFields = std::make_tuple(__VA_ARGS__); \
  }

// DescribeEnum<Type> with the given Spelled(enumerator, "spelling")s.
#define TAAS_SCHEMA_ENUM(Type, ...)                      \
  template <>                                            \
  struct DescribeEnum<Type> {                            \
    static constexpr std::string_view kName = #Type;     \
    static constexpr std::array kValues = {__VA_ARGS__}; \
  }
