// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/pci_resource.hpp"

#include "util/strings.hpp"

namespace passthru::scan {

namespace {

// include/linux/ioport.h
constexpr std::uint64_t k_ioresource_mem = 0x200;
constexpr std::uint64_t k_ioresource_prefetch = 0x2000;
constexpr std::uint64_t k_ioresource_mem_64 = 0x100000;
constexpr int k_standard_bars = 6; // lines 0-5: BAR0-BAR5; 6 is the ROM, 7-12 the SR-IOV BARs

} // namespace

std::optional<std::vector<MemBar>> parse_pci_resource(std::string_view text)
{
    std::vector<MemBar> bars;
    bool well_formed = false;
    int index = 0;
    for (const auto& line : util::split_lines(text)) {
        if (index >= k_standard_bars) {
            break;
        }
        const int bar = index++;
        const auto fields = util::split(util::trim(line), " ");
        if (fields.size() != 3) {
            continue;
        }
        const auto start = util::parse_hex(fields[0]);
        const auto end = util::parse_hex(fields[1]);
        const auto flags = util::parse_hex(fields[2]);
        if (!start || !end || !flags) {
            continue;
        }
        well_formed = true;
        if ((*flags & k_ioresource_mem) == 0 || *end <= *start) {
            continue; // I/O ports, or not assigned
        }
        bars.push_back({bar, *end - *start + 1, (*flags & k_ioresource_mem_64) != 0, (*flags & k_ioresource_prefetch) != 0});
    }
    if (!well_formed) {
        return std::nullopt;
    }
    return bars;
}

std::optional<bool> any_assigned_bar(std::string_view text)
{
    bool well_formed = false;
    bool assigned = false;
    int index = 0;
    for (const auto& line : util::split_lines(text)) {
        if (index++ >= k_standard_bars) {
            break;
        }
        const auto fields = util::split(util::trim(line), " ");
        const auto start = fields.size() == 3 ? util::parse_hex(fields[0]) : std::nullopt;
        const auto end = fields.size() == 3 ? util::parse_hex(fields[1]) : std::nullopt;
        const auto flags = fields.size() == 3 ? util::parse_hex(fields[2]) : std::nullopt;
        if (!start || !end || !flags) {
            continue;
        }
        well_formed = true;
        assigned = assigned || *end > *start || *flags != 0;
    }
    if (!well_formed) {
        return std::nullopt;
    }
    return assigned;
}

std::uint64_t prefetchable64_bytes(const std::vector<MemBar>& bars)
{
    std::uint64_t total = 0;
    for (const auto& bar : bars) {
        if (bar.is_64bit && bar.prefetchable) {
            total += bar.size;
        }
    }
    return total;
}

} // namespace passthru::scan
