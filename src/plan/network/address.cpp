// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/network/address.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "util/strings.hpp"

namespace passthru::plan {

std::optional<IpAddress> parse_ip(std::string_view text)
{
    const std::string s(text);
    if (s.empty() || s.find_first_of(" \t/%") != std::string::npos) {
        return std::nullopt;
    }
    IpAddress out;
    if (s.find(':') == std::string::npos) {
        in_addr a{};
        if (::inet_pton(AF_INET, s.c_str(), &a) != 1) {
            return std::nullopt;
        }
        out.family = IpFamily::v4;
        std::memcpy(out.bytes.data(), &a, 4);
    } else {
        in6_addr a{};
        if (::inet_pton(AF_INET6, s.c_str(), &a) != 1) {
            return std::nullopt;
        }
        out.family = IpFamily::v6;
        std::memcpy(out.bytes.data(), &a, 16);
    }
    return out;
}

std::optional<Cidr> parse_cidr(std::string_view text)
{
    const std::size_t slash = text.find('/');
    if (slash == std::string_view::npos) {
        return std::nullopt;
    }
    auto address = parse_ip(text.substr(0, slash));
    const std::string_view prefix_text = text.substr(slash + 1);
    if (!address || prefix_text.empty() || prefix_text.size() > 3
        || prefix_text.find_first_not_of("0123456789") != std::string_view::npos) {
        return std::nullopt;
    }
    const auto prefix = util::parse_int(prefix_text);
    if (!prefix || *prefix < 0 || *prefix > address->max_prefix()) {
        return std::nullopt;
    }
    return Cidr{*address, static_cast<int>(*prefix)};
}

namespace {

IpAddress mask_bits(const Cidr& cidr, bool set_host_bits)
{
    IpAddress out = cidr.address;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const int bit_start = static_cast<int>(i) * 8;
        int keep = cidr.prefix - bit_start; // network bits in this byte
        keep = keep < 0 ? 0 : (keep > 8 ? 8 : keep);
        const auto net_mask = static_cast<std::uint8_t>(keep == 0 ? 0 : (0xFF << (8 - keep)) & 0xFF);
        out.bytes[i] = set_host_bits ? static_cast<std::uint8_t>(out.bytes[i] | static_cast<std::uint8_t>(~net_mask))
                                     : static_cast<std::uint8_t>(out.bytes[i] & net_mask);
    }
    return out;
}

} // namespace

IpAddress network_of(const Cidr& cidr)
{
    return mask_bits(cidr, false);
}

IpAddress broadcast_of(const Cidr& cidr)
{
    return mask_bits(cidr, true);
}

bool in_subnet(const Cidr& cidr, const IpAddress& address)
{
    if (address.family != cidr.address.family) {
        return false;
    }
    return network_of(cidr) == network_of(Cidr{address, cidr.prefix});
}

std::string to_string(const IpAddress& address)
{
    char buf[INET6_ADDRSTRLEN] = {};
    if (address.family == IpFamily::v4) {
        ::inet_ntop(AF_INET, address.bytes.data(), buf, sizeof buf);
    } else {
        ::inet_ntop(AF_INET6, address.bytes.data(), buf, sizeof buf);
    }
    return buf;
}

} // namespace passthru::plan
