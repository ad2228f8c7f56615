// SPDX-License-Identifier: GPL-2.0-or-later
// IPv4/IPv6 addresses and prefixes for --address/--gateway and for reading
// the interfaces file (inet_pton(3) does the parsing).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace passthru::plan {

enum class IpFamily
{
    v4,
    v6,
};

struct IpAddress
{
    IpFamily family = IpFamily::v4;
    std::array<std::uint8_t, 16> bytes{}; // v4 uses the first 4

    std::size_t size() const { return family == IpFamily::v4 ? 4 : 16; }
    int max_prefix() const { return family == IpFamily::v4 ? 32 : 128; }
    // The interfaces(5) family word: "inet" or "inet6".
    std::string_view ifupdown_family() const { return family == IpFamily::v4 ? "inet" : "inet6"; }
    bool operator==(const IpAddress& other) const = default;
};

struct Cidr
{
    IpAddress address;
    int prefix = 0;
};

// "192.168.1.1", "fd00::1"; nullopt for anything else (no prefix, no zone).
std::optional<IpAddress> parse_ip(std::string_view text);
// "192.168.1.252/24", "fd00::2/64"; the prefix is required.
std::optional<Cidr> parse_cidr(std::string_view text);
// True when address lies in cidr's subnet (same family, same first prefix bits).
bool in_subnet(const Cidr& cidr, const IpAddress& address);
// The network address of the subnet (host bits cleared).
IpAddress network_of(const Cidr& cidr);
// The IPv4 broadcast address of the subnet (host bits set).
IpAddress broadcast_of(const Cidr& cidr);
std::string to_string(const IpAddress& address);

} // namespace passthru::plan
