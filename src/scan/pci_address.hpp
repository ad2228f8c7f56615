// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace passthru::scan {

// domain:bus:device.function as the kernel names PCI functions.
struct PciAddress
{
    std::uint32_t domain = 0;
    std::uint8_t bus = 0;
    std::uint8_t device = 0;   // 0-0x1f
    std::uint8_t function = 0; // 0-7

    // Accepts "0000:01:00.0" and "01:00.0" (domain 0); case-insensitive.
    static std::optional<PciAddress> parse(std::string_view text);
    // "0000:01:00.0"
    std::string str() const;
    // "0000:01:00": the slot, i.e. every function of a multifunction device.
    std::string slot() const;
    bool same_slot(const PciAddress& other) const { return domain == other.domain && bus == other.bus && device == other.device; }

    auto operator<=>(const PciAddress&) const = default; // NOLINT(modernize-use-nullptr): clang-tidy 14 misreads a defaulted <=>
};

// A slot "0000:01:00" (or "01:00"); nullopt when malformed.
std::optional<PciAddress> parse_slot(std::string_view text);

} // namespace passthru::scan
