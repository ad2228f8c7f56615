// SPDX-License-Identifier: GPL-2.0-or-later
// Could a network change lock the admin out? Decides from the host's routes
// and IPv6 addresses as scan read them (scan::RuntimeState) and the SSH
// session's server address (plan::Request::ssh_connection).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/interfaces.hpp"
#include "plan/network/address.hpp"
#include "scan/inventory.hpp"

namespace passthru::plan {

struct RouteEntry
{
    std::string iface;
    Cidr destination;
    bool is_default = false;
};

// Routes of the host (IPv4 and IPv6) that are up; nullopt when scan could not read the IPv4 ones.
std::optional<std::vector<RouteEntry>> host_routes(const scan::RuntimeState& host);
// Parses /proc/net/route and /proc/net/ipv6_route text (the IPv6 text may be empty).
std::vector<RouteEntry> parse_routes(std::string_view route_v4, std::string_view route_v6);

// The server address of an SSH_CONNECTION value ("client cport server sport").
std::optional<IpAddress> ssh_server_address(std::string_view ssh_connection);

struct LockoutRisk
{
    bool guard_needed = false;
    std::vector<std::string> reasons; // why (shown with the refusal or the confirm prompt)
};

// Does changing `touched` risk cutting this host off? True when the default
// route goes through one of them, when the routes cannot be read (fail
// closed), or when the SSH session's server address is on one of them
// (an address option in the interfaces file, a connected route or an IPv6
// address of the interface). ssh_connection is only meaningful on the live
// host: under --root pass nullopt.
LockoutRisk assess_lockout(const scan::RuntimeState& host, const format::InterfacesFile& current, const std::vector<std::string>& touched,
                           const std::optional<std::string>& ssh_connection);

} // namespace passthru::plan
