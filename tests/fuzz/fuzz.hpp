// SPDX-License-Identifier: GPL-2.0-or-later
// Shared by the fuzz targets (tests/fuzz/README.md): the input as text, and
// the check of a property the parser promises, which aborts (a crash the
// fuzzer reports and keeps) when it does not hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace passthru::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size)
{
    return {reinterpret_cast<const char*>(data), size}; // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
}

inline void require(bool holds, const char* what)
{
    if (!holds) {
        std::fprintf(stderr, "fuzz: property broken: %s\n", what); // NOLINT(cppcoreguidelines-pro-type-vararg)
        std::abort();
    }
}

} // namespace passthru::fuzz
