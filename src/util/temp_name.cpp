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
    return "." + std::string(base) + std::string(k_marker) + std::to_string(number % k_modulus);
}

bool is_temp_name(std::string_view entry, std::string_view base)
{
    if (base.empty() || !lex::eat(entry, ".") || !lex::eat(entry, base) || !lex::eat(entry, k_marker)) {
        return false;
    }
    return entry.size() <= 6 && lex::all_of(entry, lex::is_digit);
}

} // namespace passthru::util
