// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/pci_address.hpp"

#include <algorithm>

#include "util/strings.hpp"

namespace passthru::scan {

namespace {

std::optional<PciAddress> parse_parts(std::string_view text, bool with_function)
{
    PciAddress addr;
    std::string_view rest = text;
    // Optional domain: count the colons.
    const auto colons = static_cast<int>(std::count(text.begin(), text.end(), ':'));
    if (colons == 2) {
        const auto pos = rest.find(':');
        const auto dom = util::parse_hex(rest.substr(0, pos));
        if (!dom || pos == 0 || pos > 8 || *dom > 0xffffffffULL) {
            return std::nullopt;
        }
        addr.domain = static_cast<std::uint32_t>(*dom);
        rest.remove_prefix(pos + 1);
    } else if (colons != 1) {
        return std::nullopt;
    }
    const auto pos = rest.find(':');
    if (pos != 2) {
        return std::nullopt;
    }
    const auto bus = util::parse_hex(rest.substr(0, 2));
    rest.remove_prefix(3);
    std::string_view dev_text = rest;
    std::optional<std::uint64_t> func = 0;
    if (with_function) {
        const auto dot = rest.find('.');
        if (dot != 2 || rest.size() != 4) {
            return std::nullopt;
        }
        dev_text = rest.substr(0, 2);
        func = util::parse_hex(rest.substr(3, 1));
    } else if (rest.size() != 2) {
        return std::nullopt;
    }
    const auto dev = util::parse_hex(dev_text);
    if (!bus || !dev || !func || *bus > 0xff || *dev > 0x1f || *func > 7) {
        return std::nullopt;
    }
    addr.bus = static_cast<std::uint8_t>(*bus);
    addr.device = static_cast<std::uint8_t>(*dev);
    addr.function = static_cast<std::uint8_t>(*func);
    return addr;
}

} // namespace

std::optional<PciAddress> PciAddress::parse(std::string_view text)
{
    return parse_parts(util::trim(text), true);
}

std::optional<PciAddress> parse_slot(std::string_view text)
{
    return parse_parts(util::trim(text), false);
}

std::string PciAddress::str() const
{
    return slot() + "." + util::hex(function, 1);
}

std::string PciAddress::slot() const
{
    return util::hex(domain, 4) + ":" + util::hex(bus, 2) + ":" + util::hex(device, 2);
}

} // namespace passthru::scan
