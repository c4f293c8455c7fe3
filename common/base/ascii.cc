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

std::string_view Utf8Prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t cut = max_bytes;
  // Continuation bytes are 10xxxxxx: back up to the start of the character they belong to.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

}  // namespace taas
