// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/temp_name.hpp"

#include "util/lex.hpp"

namespace passthru::util {

namespace {
constexpr std::string_view k_marker = ".passthru-";
constexpr unsigned k_modulus = 1000000; // at most 6 digits
} // namespace

std::string temp_name(std::string_view base, unsigned number)
{
    // Appended, not "." + ...: GCC 12 warns -Wrestrict, falsely, on a
    // one-character literal before a temporary string at -O3 (GCC bug 105651).
    std::string out(1, '.');
    out += base;
    out += k_marker;
    out += std::to_string(number % k_modulus);
    return out;
}

bool is_temp_name(std::string_view entry, std::string_view base)
{
    if (base.empty() || !lex::eat(entry, ".") || !lex::eat(entry, base) || !lex::eat(entry, k_marker)) {
        return false;
    }
    return entry.size() <= 6 && lex::all_of(entry, lex::is_digit);
}

} // namespace passthru::util
