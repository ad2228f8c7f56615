// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

// Character classes and spans for the hand-written matchers of host input.
// No std::regex on anything read from the host: libstdc++'s regex executor
// recurses once per character and a long line overflows the stack. These
// helpers run in constant stack, whatever the length of the input.

#include <cstddef>
#include <string_view>

namespace passthru::util::lex {

// The C locale's isspace (what \s means to std::regex).
constexpr bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
constexpr bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}
constexpr bool is_lower(char c)
{
    return c >= 'a' && c <= 'z';
}
constexpr bool is_alpha(char c)
{
    return is_lower(c) || (c >= 'A' && c <= 'Z');
}
constexpr bool is_alnum(char c)
{
    return is_alpha(c) || is_digit(c);
}
// Lower-case hex digit ([a-f0-9]).
constexpr bool is_xdigit_lower(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f');
}

// Number of characters from `pos` on that satisfy `pred`.
template<class Pred>
constexpr std::size_t span(std::string_view s, std::size_t pos, Pred pred)
{
    std::size_t n = 0;
    while (pos + n < s.size() && pred(s[pos + n])) {
        ++n;
    }
    return n;
}

// True when `s` is not empty and every character satisfies `pred`.
template<class Pred>
constexpr bool all_of(std::string_view s, Pred pred)
{
    return !s.empty() && span(s, 0, pred) == s.size();
}

// Removes a leading `prefix`; false (and `s` unchanged) when absent.
constexpr bool eat(std::string_view& s, std::string_view prefix)
{
    if (!s.starts_with(prefix)) {
        return false;
    }
    s.remove_prefix(prefix.size());
    return true;
}

// Removes the leading run of characters satisfying `pred`; returns its length.
template<class Pred>
constexpr std::size_t eat_span(std::string_view& s, Pred pred)
{
    const std::size_t n = span(s, 0, pred);
    s.remove_prefix(n);
    return n;
}

} // namespace passthru::util::lex
