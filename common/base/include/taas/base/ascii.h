// ASCII case folding for names that come from outside (replica types, label values), over
// Abseil's: std::string_view front ends, since Debian's Abseil has a string_view type of its own;
// and cutting text to a size without splitting a UTF-8 character.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace taas {

std::string AsciiLower(std::string_view text);
bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b);

// The longest prefix of `text` of at most `max_bytes` that does not end inside a UTF-8 sequence
// (a cut message stays valid UTF-8, which JSON writers require).
std::string_view Utf8Prefix(std::string_view text, std::size_t max_bytes);

}  // namespace taas
