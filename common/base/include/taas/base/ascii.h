// ASCII case folding for names that come from outside (replica types, label values), over
// Abseil's: std::string_view front ends, since Debian's Abseil has a string_view type of its own.
#pragma once

#include <string>
#include <string_view>

namespace taas {

std::string AsciiLower(std::string_view text);
bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b);

}  // namespace taas
