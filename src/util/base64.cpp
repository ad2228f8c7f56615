// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/base64.hpp"

#include <array>
#include <cstdint>

namespace passthru::util {

namespace {

constexpr std::string_view k_alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The 6-bit value of C, or -1.
int sextet(char c)
{
    const auto at = k_alphabet.find(c);
    return at == std::string_view::npos ? -1 : static_cast<int>(at);
}

} // namespace

std::string base64_encode(std::string_view bytes)
{
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (std::size_t i = 0; i < bytes.size(); i += 3) {
        const std::size_t n = bytes.size() - i < 3 ? bytes.size() - i : 3;
        std::uint32_t v = 0;
        for (std::size_t k = 0; k < 3; ++k) {
            v = (v << 8U) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0U);
        }
        for (std::size_t k = 0; k < 4; ++k) {
            out += k <= n ? k_alphabet[(v >> (18U - 6U * k)) & 0x3fU] : '=';
        }
    }
    return out;
}

std::optional<std::string> base64_decode(std::string_view text)
{
    if (text.size() % 4 != 0) {
        return std::nullopt;
    }
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (std::size_t i = 0; i < text.size(); i += 4) {
        const bool final_quad = i + 4 == text.size();
        std::size_t pad = 0;
        std::uint32_t v = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            const char c = text[i + k];
            if (c == '=' && final_quad && k >= 2) {
                ++pad;
                v <<= 6U;
                continue;
            }
            const int s = sextet(c);
            if (s < 0 || pad != 0) {
                return std::nullopt; // not the alphabet, or a character after padding
            }
            v = (v << 6U) | static_cast<std::uint32_t>(s);
        }
        const std::size_t n = 3 - pad;
        if (pad != 0 && (v & ((1U << (8U * pad)) - 1U)) != 0) {
            return std::nullopt; // bits past the last byte must be zero (canonical form)
        }
        for (std::size_t k = 0; k < n; ++k) {
            out += static_cast<char>((v >> (16U - 8U * k)) & 0xffU);
        }
    }
    return out;
}

} // namespace passthru::util
