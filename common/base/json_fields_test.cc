#include "taas/base/json_fields.h"

#include <doctest/doctest.h>

namespace taas::json_fields {
namespace {

const Json kEveryType = Json::parse(R"({
  "s": "text", "i": -7, "u": 18446744073709551615, "f": 2.5, "whole": 3.0, "huge": 1e300,
  "b": true, "n": null, "o": {"k": 1}, "a": [1, 2]
})");

TEST_CASE("lenient reads return nothing for every other type and never throw") {
  for (const char* key : {"s", "i", "u", "f", "whole", "huge", "b", "n", "o", "a", "missing"}) {
    CAPTURE(key);
    CHECK(String(kEveryType, key).has_value() == (std::string_view(key) == "s"));
    CHECK(Bool(kEveryType, key).has_value() == (std::string_view(key) == "b"));
    CHECK((Object(kEveryType, key) != nullptr) == (std::string_view(key) == "o"));
    CHECK((Array(kEveryType, key) != nullptr) == (std::string_view(key) == "a"));
  }
  CHECK(Int(kEveryType, "i") == -7);
  CHECK(Int(kEveryType, "whole") == 3);
  CHECK_FALSE(Int(kEveryType, "u").has_value());     // Does not fit int64.
  CHECK_FALSE(Int(kEveryType, "f").has_value());     // Not integral.
  CHECK_FALSE(Int(kEveryType, "huge").has_value());  // Out of range.
  CHECK_FALSE(Int(kEveryType, "s").has_value());
  CHECK(StringOr(kEveryType, "i", "fallback") == "fallback");
}

TEST_CASE("reads of a non-object parent find nothing") {
  for (const Json& parent : {Json("x"), Json(1), Json::array({1}), Json(nullptr)}) {
    CHECK(Find(parent, "s") == nullptr);
    CHECK_FALSE(String(parent, "s").has_value());
    CHECK(OptionalString(parent, "s", "p").value() == std::nullopt);
  }
}

TEST_CASE("strict reads name the field, the expected and the found type") {
  auto wrong = OptionalInt(kEveryType, "s", "spec.runPolicy.backoffLimit");
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().message() == "spec.runPolicy.backoffLimit must be an integer, got string");
  auto fraction = OptionalInt(kEveryType, "f", "x.y");
  REQUIRE_FALSE(fraction.ok());
  CHECK(fraction.status().message() == "x.y must be an integer that fits 64 bits, got 2.5");
  CHECK(OptionalInt(kEveryType, "missing", "x").value() == std::nullopt);
  CHECK(OptionalInt(kEveryType, "i", "x").value() == -7);
  CHECK(OptionalBool(kEveryType, "b", "x").value() == true);
  CHECK_FALSE(OptionalBool(kEveryType, "n", "x").ok());
  CHECK_FALSE(OptionalObject(kEveryType, "a", "x").ok());
  CHECK(OptionalObject(kEveryType, "o", "x").value() == Find(kEveryType, "o"));
  CHECK_FALSE(OptionalArray(kEveryType, "o", "x").ok());
  CHECK(OptionalArray(kEveryType, "missing", "x").value() == nullptr);
}

}  // namespace
}  // namespace taas::json_fields
