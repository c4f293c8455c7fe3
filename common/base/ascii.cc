#include "taas/base/ascii.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace taas {
namespace {

absl::string_view Abseil(std::string_view text) { return {text.data(), text.size()}; }

}  // namespace

std::string AsciiLower(std::string_view text) { return absl::AsciiStrToLower(Abseil(text)); }

bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b) {
  return absl::EqualsIgnoreCase(Abseil(a), Abseil(b));
}

}  // namespace taas
