// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/network/routes.hpp"

#include <algorithm>

#include "util/strings.hpp"

namespace passthru::plan {

namespace {

constexpr unsigned k_rtf_up = 0x0001;
constexpr unsigned k_rtf_reject = 0x0200;

// /proc/net/route prints each __be32 as the host-order u32 in hex; on the
// little-endian machines Proxmox VE runs on the first network byte is the lowest.
std::optional<IpAddress> v4_from_proc_hex(std::string_view hex)
{
    const auto v = util::parse_hex(hex);
    if (!v || hex.size() != 8) {
        return std::nullopt;
    }
    IpAddress a;
    a.family = IpFamily::v4;
    for (int i = 0; i < 4; ++i) {
        a.bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>((*v >> (8 * i)) & 0xFF);
    }
    return a;
}

std::optional<IpAddress> v6_from_proc_hex(std::string_view hex)
{
    if (hex.size() != 32) {
        return std::nullopt;
    }
    IpAddress a;
    a.family = IpFamily::v6;
    for (std::size_t i = 0; i < 16; ++i) {
        const auto b = util::parse_hex(hex.substr(i * 2, 2));
        if (!b) {
            return std::nullopt;
        }
        a.bytes[i] = static_cast<std::uint8_t>(*b);
    }
    return a;
}

int mask_to_prefix(const IpAddress& mask)
{
    int n = 0;
    for (std::size_t i = 0; i < 4; ++i) {
        for (int bit = 7; bit >= 0; --bit) {
            if ((mask.bytes[i] >> bit) & 1) {
                ++n;
            }
        }
    }
    return n;
}

bool is_touched(const std::vector<std::string>& touched, std::string_view name)
{
    return std::find(touched.begin(), touched.end(), name) != touched.end();
}

} // namespace

std::vector<RouteEntry> parse_routes(std::string_view route_v4, std::string_view route_v6)
{
    std::vector<RouteEntry> out;
    for (const auto& line : util::split_lines(route_v4)) {
        const auto f = util::split(line, " \t");
        if (f.size() < 8 || f[0] == "Iface") {
            continue;
        }
        const auto dest = v4_from_proc_hex(f[1]);
        const auto mask = v4_from_proc_hex(f[7]);
        const auto flags = util::parse_hex(f[3]);
        if (!dest || !mask || !flags || (*flags & k_rtf_up) == 0 || (*flags & k_rtf_reject) != 0) {
            continue;
        }
        RouteEntry r{f[0], Cidr{*dest, mask_to_prefix(*mask)}, false};
        r.is_default = r.destination.prefix == 0;
        out.push_back(std::move(r));
    }
    for (const auto& line : util::split_lines(route_v6)) {
        const auto f = util::split(line, " \t");
        if (f.size() < 10) {
            continue;
        }
        const auto dest = v6_from_proc_hex(f[0]);
        const auto plen = util::parse_hex(f[1]);
        const auto flags = util::parse_hex(f[8]);
        if (!dest || !plen || !flags || (*flags & k_rtf_up) == 0 || (*flags & k_rtf_reject) != 0 || f[9] == "lo") {
            continue;
        }
        RouteEntry r{f[9], Cidr{*dest, static_cast<int>(*plen)}, false};
        r.is_default = r.destination.prefix == 0;
        out.push_back(std::move(r));
    }
    return out;
}

std::optional<std::vector<RouteEntry>> host_routes(const scan::RuntimeState& host)
{
    if (!host.route_v4) {
        return std::nullopt;
    }
    return parse_routes(*host.route_v4, host.route_v6 ? *host.route_v6 : std::string());
}

std::optional<IpAddress> ssh_server_address(std::string_view ssh_connection)
{
    const auto f = util::split(ssh_connection, " ");
    if (f.size() != 4) {
        return std::nullopt;
    }
    std::string server = f[2];
    // An IPv4-mapped IPv6 address ("::ffff:192.0.2.1") is the IPv4 address.
    if (server.rfind("::ffff:", 0) == 0 && server.find('.') != std::string::npos) {
        server = server.substr(7);
    }
    return parse_ip(server);
}

LockoutRisk assess_lockout(const scan::RuntimeState& host, const format::InterfacesFile& current, const std::vector<std::string>& touched,
                           const std::optional<std::string>& ssh_connection)
{
    LockoutRisk risk;
    const auto routes = host_routes(host);
    if (!routes) {
        risk.guard_needed = true;
        risk.reasons.push_back("/proc/net/route cannot be read, so passthru cannot tell which interface carries the "
                               "default route");
    } else {
        for (const auto& r : *routes) {
            if (r.is_default && is_touched(touched, r.iface)) {
                risk.guard_needed = true;
                risk.reasons.push_back(std::string("the ") + (r.destination.address.family == IpFamily::v4 ? "IPv4" : "IPv6")
                                       + " default route goes through " + r.iface + ", which this change reconfigures");
            }
        }
    }
    if (!ssh_connection) {
        return risk;
    }
    const auto server = ssh_server_address(*ssh_connection);
    if (!server) {
        return risk;
    }
    const std::string addr = to_string(*server);
    for (const auto& st : current.stanzas()) {
        if (!is_touched(touched, st.name)) {
            continue;
        }
        for (const std::size_t index : st.options) {
            const auto& line = current.lines()[index];
            if (line.keyword() != "address") {
                continue;
            }
            for (std::size_t w = 1; w < line.words.size(); ++w) {
                const std::string& word = line.words[w];
                auto cidr = parse_cidr(word);
                auto ip = cidr ? std::optional<IpAddress>(cidr->address) : parse_ip(word);
                if (ip && *ip == *server) {
                    risk.guard_needed = true;
                    risk.reasons.push_back("this SSH session came in on " + addr + ", an address of " + st.name);
                }
            }
        }
    }
    if (routes) {
        for (const auto& r : *routes) {
            if (!r.is_default && is_touched(touched, r.iface) && in_subnet(r.destination, *server)) {
                risk.guard_needed = true;
                risk.reasons.push_back("this SSH session came in on " + addr + ", in the subnet " + to_string(r.destination.address) + "/"
                                       + std::to_string(r.destination.prefix) + " of " + r.iface);
            }
        }
    }
    // /proc/net/if_inet6: "addr32hex ifindex prefixlen scope flags ifname".
    if (host.inet6_addresses && server->family == IpFamily::v6) {
        for (const auto& line : util::split_lines(*host.inet6_addresses)) {
            const auto f = util::split(line, " \t");
            if (f.size() >= 6 && is_touched(touched, f[5]) && v6_from_proc_hex(f[0]) == server) {
                risk.guard_needed = true;
                risk.reasons.push_back("this SSH session came in on " + addr + ", an address of " + f[5]);
            }
        }
    }
    std::sort(risk.reasons.begin(), risk.reasons.end());
    risk.reasons.erase(std::unique(risk.reasons.begin(), risk.reasons.end()), risk.reasons.end());
    return risk;
}

} // namespace passthru::plan
