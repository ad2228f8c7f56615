// SPDX-License-Identifier: GPL-2.0-or-later
#include "capture/redact.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace passthru::capture {

namespace {

std::string lowercase_of(std::string_view s)
{
    std::string out(s);
    for (char& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

bool hex_char(char c)
{
    return std::isxdigit(static_cast<unsigned char>(c)) != 0;
}

bool alnum_char(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

std::string last_component(std::string_view path)
{
    const auto slash = path.rfind('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// A Proxmox VM (or container) config: /etc/pve/qemu-server/101.conf, and the
// same below /etc/pve/nodes/NAME/.
bool is_guest_config(std::string_view path)
{
    if (!path.ends_with(".conf") || !path.starts_with("/etc/pve/")) {
        return false;
    }
    return path.find("/qemu-server/") != std::string_view::npos || path.find("/lxc/") != std::string_view::npos;
}

// Files that name the node: /etc/hostname and hosts, the cluster files of
// /etc/pve, the task logs (UPID:NODE:...).
bool names_the_node(std::string_view path)
{
    return path == "/etc/hostname" || path == "/etc/hosts" || path == "/etc/mailname" || path.starts_with("/etc/pve/.")
           || path == "/etc/pve/corosync.conf" || path == "/etc/pve/storage.cfg" || path.starts_with("/etc/pve/mapping/")
           || path.starts_with("/etc/pve/nodes/") || path.starts_with("/etc/corosync/") || path.starts_with("/var/log/pve/tasks/");
}

// Files that hold IP addresses as text.
bool holds_addresses(std::string_view path)
{
    return path.starts_with("/etc/network/interfaces") || path == "/etc/hosts" || path == "/etc/resolv.conf" || is_guest_config(path)
           || path == "/etc/pve/corosync.conf" || path.starts_with("/etc/corosync/") || path.starts_with("/etc/pve/.")
           || path.starts_with("/etc/pve/sdn/") || path.starts_with("/etc/pve/nodes/") || path.starts_with("/etc/systemd/network/");
}

// Binary sysfs files (PCI config space, ROM, VPD) are packed as they were read.
bool is_binary_attr(std::string_view path)
{
    if (!path.starts_with("/sys/")) {
        return false;
    }
    const std::string base = last_component(path);
    return base == "config" || base == "rom" || base == "vpd" || base.starts_with("resource");
}

bool secret_key(std::string_view key)
{
    const std::string k = lowercase_of(key);
    return k == "cipassword" || k == "sshkeys" || k.find("password") != std::string::npos || k.find("secret") != std::string::npos
           || k.find("token") != std::string::npos;
}

bool host_token_char(char c)
{
    return alnum_char(c) || c == '-' || c == '_' || c == '.' || c == '/';
}

std::string two_hex(unsigned value, bool upper)
{
    char buf[3];
    std::snprintf(buf, sizeof buf, upper ? "%02X" : "%02x", value & 0xffU);
    return buf;
}

// The 4 octets of a dotted IPv4 address at text[i], when one starts there;
// its length in `len`.
bool parse_ipv4_at(std::string_view text, std::size_t i, std::array<unsigned, 4>& octets, std::size_t& len)
{
    std::size_t pos = i;
    for (std::size_t k = 0; k < 4; ++k) {
        std::size_t digits = 0;
        unsigned value = 0;
        while (pos < text.size() && digits < 4 && std::isdigit(static_cast<unsigned char>(text[pos])) != 0) {
            value = value * 10 + static_cast<unsigned>(text[pos] - '0');
            ++pos;
            ++digits;
        }
        if (digits == 0 || digits > 3 || value > 255) {
            return false;
        }
        octets.at(k) = value;
        if (k < 3) {
            if (pos >= text.size() || text[pos] != '.') {
                return false;
            }
            ++pos;
        }
    }
    const bool digit_follows = pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) != 0;
    const bool dotted_follows = pos + 1 < text.size() && text[pos] == '.' && std::isdigit(static_cast<unsigned char>(text[pos + 1])) != 0;
    if (digit_follows || dotted_follows) {
        return false;
    }
    len = pos - i;
    return true;
}

// Addresses that say nothing about the host: unspecified, loopback,
// multicast, broadcast and netmasks.
bool keep_ipv4(const std::array<unsigned, 4>& o)
{
    return o[0] == 0 || o[0] == 127 || o[0] >= 224;
}

using V6 = std::array<std::uint8_t, 16>;

bool keep_ipv6(const V6& a)
{
    bool zero_prefix = true;
    for (std::size_t i = 0; i < 15; ++i) {
        zero_prefix = zero_prefix && a.at(i) == 0;
    }
    return zero_prefix || a[0] == 0xff; // ::, ::1, multicast
}

} // namespace

std::string_view to_string(RedactKind kind)
{
    switch (kind) {
    case RedactKind::secret:
        return "secret";
    case RedactKind::ipv4:
        return "ipv4";
    case RedactKind::ipv6:
        return "ipv6";
    case RedactKind::mac:
        return "mac";
    case RedactKind::hostname:
        return "hostname";
    }
    return "secret";
}

void Redactor::add_hostname(std::string_view name)
{
    if (name.empty() || name == "localhost" || name == "localhost.localdomain") {
        return;
    }
    m_hostnames.emplace(name);
    if (const auto dot = name.find('.'); dot != std::string_view::npos && dot > 0) {
        m_hostnames.emplace(name.substr(0, dot));
    }
}

void Redactor::count(std::string_view file, RedactKind kind, std::size_t n)
{
    if (n > 0 && !file.empty()) {
        m_counts[{std::string(file), kind}] += n;
    }
}

std::string Redactor::map_hostname(std::string_view name)
{
    const auto dot = name.find('.');
    if (dot != std::string_view::npos && dot > 0) {
        // pve.example.com: the short name's replacement in a domain of its own
        return map_hostname(name.substr(0, dot)) + ".invalid";
    }
    auto [it, added] = m_host_map.try_emplace(std::string(name));
    if (added) {
        it->second = "node" + std::to_string(m_host_map.size());
    }
    return it->second;
}

std::string Redactor::map_ipv4(std::string_view address)
{
    std::array<unsigned, 4> o{};
    std::size_t len = 0;
    if (!parse_ipv4_at(address, 0, o, len) || len != address.size() || keep_ipv4(o)) {
        return std::string(address);
    }
    // Each /24 of the host to one of the documentation networks (RFC 5737),
    // then to the benchmarking range (RFC 2544); the host part is kept.
    static constexpr std::array<std::string_view, 3> k_nets{"192.0.2", "198.51.100", "203.0.113"};
    const std::string net = std::to_string(o[0]) + "." + std::to_string(o[1]) + "." + std::to_string(o[2]);
    auto [it, added] = m_v4_net.try_emplace(net);
    if (added) {
        const std::size_t n = m_v4_net.size() - 1;
        it->second = n < k_nets.size() ? std::string(k_nets.at(n))
                                       : "198." + std::to_string(18 + (((n - 3) >> 8) & 1U)) + "." + std::to_string((n - 3) & 0xffU);
    }
    return it->second + "." + std::to_string(o[3]);
}

namespace {

// The prefix (first 8 bytes) and interface id (last 8) of an IPv6 address as keys.
std::string v6_half(const V6& a, std::size_t from)
{
    std::string out;
    for (std::size_t i = from; i < from + 8; ++i) {
        out += two_hex(a.at(i), false);
    }
    return out;
}

// Replaces an address's prefix (unless link-local) by 2001:db8:0:N::/64
// (RFC 3849) and its interface id, unless a small one (::1, ::2), by 0:0:1:M.
V6 map_v6_bytes(const V6& a, std::map<std::string, std::string>& nets, std::map<std::string, std::string>& hosts)
{
    V6 out = a;
    const bool link_local = a[0] == 0xfe && (a[1] & 0xc0U) == 0x80;
    if (!link_local) {
        auto [it, added] = nets.try_emplace(v6_half(a, 0));
        if (added) {
            it->second = std::to_string(nets.size());
        }
        const unsigned n = static_cast<unsigned>(std::stoul(it->second));
        const V6 doc{0x20, 0x01, 0x0d, 0xb8, 0, 0, static_cast<std::uint8_t>(n >> 8), static_cast<std::uint8_t>(n & 0xffU)};
        std::copy(doc.begin(), doc.begin() + 8, out.begin());
    }
    bool small = true;
    for (std::size_t i = 8; i < 14; ++i) {
        small = small && a.at(i) == 0;
    }
    if (!small) {
        auto [it, added] = hosts.try_emplace(v6_half(a, 8));
        if (added) {
            it->second = std::to_string(hosts.size());
        }
        const unsigned m = static_cast<unsigned>(std::stoul(it->second));
        const V6 iid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, static_cast<std::uint8_t>(m >> 8), static_cast<std::uint8_t>(m & 0xffU)};
        std::copy(iid.begin() + 8, iid.end(), out.begin() + 8);
    }
    return out;
}

} // namespace

std::string Redactor::map_ipv6(std::string_view address)
{
    V6 a{};
    std::string text(address);
    if (::inet_pton(AF_INET6, text.c_str(), a.data()) != 1 || keep_ipv6(a)) {
        return text;
    }
    const V6 out = map_v6_bytes(a, m_v6_net, m_v6_host);
    char buf[INET6_ADDRSTRLEN];
    if (::inet_ntop(AF_INET6, out.data(), buf, sizeof buf) == nullptr) {
        return text;
    }
    return buf;
}

std::string Redactor::map_mac(std::string_view address)
{
    const std::string key = lowercase_of(address);
    if (key == "00:00:00:00:00:00" || key == "ff:ff:ff:ff:ff:ff") {
        return std::string(address);
    }
    auto [it, added] = m_mac_map.try_emplace(key);
    if (added) {
        // Locally administered, unicast (the second-least significant bit of
        // the first octet set, the least clear): no vendor's address.
        const std::size_t n = m_mac_map.size();
        it->second = "02:00:00:00:" + two_hex(static_cast<unsigned>(n >> 8), false) + ":" + two_hex(static_cast<unsigned>(n), false);
    }
    bool upper = false;
    for (const char c : address) {
        upper = upper || std::isupper(static_cast<unsigned char>(c)) != 0;
    }
    return upper ? [s = it->second]() mutable {
        for (char& c : s) {
            c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        }
        return s;
    }()
                 : it->second;
}

std::string Redactor::hostnames_in(std::string_view file, std::string_view text, std::string_view separators)
{
    std::string out;
    std::size_t replaced = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        if (!host_token_char(text[i]) || separators.find(text[i]) != std::string_view::npos) {
            out += text[i++];
            continue;
        }
        std::size_t end = i;
        while (end < text.size() && host_token_char(text[end]) && separators.find(text[end]) == std::string_view::npos) {
            ++end;
        }
        const std::string_view token = text.substr(i, end - i);
        const auto dot = token.find('.');
        const bool known = m_hostnames.contains(std::string(token))
                           || (dot != std::string_view::npos && dot > 0 && m_hostnames.contains(std::string(token.substr(0, dot)))
                               && token.find('/') == std::string_view::npos);
        if (known) {
            out += map_hostname(token);
            ++replaced;
        } else {
            out += token;
        }
        i = end;
    }
    count(file, RedactKind::hostname, replaced);
    return out;
}

std::string Redactor::macs_in(std::string_view file, std::string_view text)
{
    std::string out;
    std::size_t replaced = 0;
    std::size_t i = 0;
    const auto mac_at = [&text](std::size_t at) {
        if (at + 17 > text.size() || (at > 0 && (hex_char(text[at - 1]) || text[at - 1] == ':'))) {
            return false;
        }
        for (std::size_t k = 0; k < 17; ++k) {
            const char c = text[at + k];
            if (k % 3 == 2 ? c != ':' : !hex_char(c)) {
                return false;
            }
        }
        return at + 17 == text.size() || (!hex_char(text[at + 17]) && text[at + 17] != ':');
    };
    while (i < text.size()) {
        if (hex_char(text[i]) && mac_at(i)) {
            const std::string mapped = map_mac(text.substr(i, 17));
            replaced += mapped != text.substr(i, 17) ? 1 : 0;
            out += mapped;
            i += 17;
        } else {
            out += text[i++];
        }
    }
    count(file, RedactKind::mac, replaced);
    return out;
}

std::string Redactor::ipv4_in(std::string_view file, std::string_view text)
{
    std::string out;
    std::size_t replaced = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        std::array<unsigned, 4> o{};
        std::size_t len = 0;
        const bool boundary = i == 0 || (!alnum_char(text[i - 1]) && text[i - 1] != '.');
        if (boundary && std::isdigit(static_cast<unsigned char>(text[i])) != 0 && parse_ipv4_at(text, i, o, len)) {
            const std::string mapped = map_ipv4(text.substr(i, len));
            replaced += mapped != text.substr(i, len) ? 1 : 0;
            out += mapped;
            i += len;
        } else {
            out += text[i++];
        }
    }
    count(file, RedactKind::ipv4, replaced);
    return out;
}

std::string Redactor::ipv6_in(std::string_view file, std::string_view text)
{
    std::string out;
    std::size_t replaced = 0;
    std::size_t i = 0;
    const auto v6_char = [](char c) { return hex_char(c) || c == ':'; };
    while (i < text.size()) {
        const bool boundary = i == 0 || (!alnum_char(text[i - 1]) && text[i - 1] != '_' && text[i - 1] != ':');
        if (!boundary || !v6_char(text[i])) {
            out += text[i++];
            continue;
        }
        std::size_t end = i;
        while (end < text.size() && v6_char(text[end])) {
            ++end;
        }
        const std::string_view run = text.substr(i, end - i);
        const bool ends_word = end == text.size() || (!alnum_char(text[end]) && text[end] != '_' && text[end] != '.');
        std::string mapped(run);
        if (ends_word && run.find(':') != std::string_view::npos) {
            mapped = map_ipv6(run);
        }
        replaced += mapped != run ? 1 : 0;
        out += mapped;
        i = end;
    }
    count(file, RedactKind::ipv6, replaced);
    return out;
}

std::string Redactor::vm_config(std::string_view file, std::string_view text)
{
    std::string out;
    std::size_t secrets = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        end = end == std::string_view::npos ? text.size() : end + 1;
        const std::string_view line = text.substr(start, end - start);
        const auto colon = line.find(':');
        if (colon != std::string_view::npos && !line.empty() && line.front() != '#' && line.front() != '['
            && secret_key(line.substr(0, colon))) {
            out += line.substr(0, colon);
            out += ": redacted";
            out += line.back() == '\n' ? "\n" : "";
            ++secrets;
        } else {
            out += line;
        }
        start = end;
    }
    count(file, RedactKind::secret, secrets);
    return out;
}

std::string Redactor::hex_ipv4(std::string_view hex)
{
    // /proc/net/route: the address in network order, printed as a host
    // (little-endian) u32: "0101A8C0" is 192.168.1.1.
    std::array<unsigned, 4> b{};
    for (std::size_t k = 0; k < 4; ++k) {
        b.at(k) = static_cast<unsigned>(std::stoul(std::string(hex.substr(k * 2, 2)), nullptr, 16));
    }
    const std::string dotted = std::to_string(b[3]) + "." + std::to_string(b[2]) + "." + std::to_string(b[1]) + "." + std::to_string(b[0]);
    const std::string mapped = map_ipv4(dotted);
    if (mapped == dotted) {
        return std::string(hex);
    }
    std::array<unsigned, 4> m{};
    std::size_t len = 0;
    parse_ipv4_at(mapped, 0, m, len);
    const bool upper = hex.find_first_of("ABCDEF") != std::string_view::npos || hex.find_first_of("abcdef") == std::string_view::npos;
    return two_hex(m[3], upper) + two_hex(m[2], upper) + two_hex(m[1], upper) + two_hex(m[0], upper);
}

std::string Redactor::hex_ipv6(std::string_view hex)
{
    V6 a{};
    for (std::size_t k = 0; k < 16; ++k) {
        a.at(k) = static_cast<std::uint8_t>(std::stoul(std::string(hex.substr(k * 2, 2)), nullptr, 16));
    }
    if (keep_ipv6(a)) {
        return std::string(hex);
    }
    const V6 out = map_v6_bytes(a, m_v6_net, m_v6_host);
    std::string text;
    for (const auto byte : out) {
        text += two_hex(byte, false);
    }
    return text;
}

std::string Redactor::proc_net(std::string_view file, std::string_view text)
{
    // The columns that hold addresses: route (Destination, Gateway),
    // ipv6_route (destination, source, next hop), if_inet6 (the address).
    const std::string base = last_component(file);
    const bool v4 = base == "route";
    const std::vector<std::size_t> columns = v4                     ? std::vector<std::size_t>{1, 2}
                                             : base == "ipv6_route" ? std::vector<std::size_t>{0, 2, 4}
                                                                    : std::vector<std::size_t>{0};
    const std::size_t width = v4 ? 8 : 32;
    std::string out(text);
    std::size_t replaced = 0;
    std::size_t line_start = 0;
    while (line_start < out.size()) {
        std::size_t line_end = out.find('\n', line_start);
        line_end = line_end == std::string::npos ? out.size() : line_end;
        std::size_t pos = line_start;
        for (std::size_t col = 0; pos < line_end; ++col) {
            while (pos < line_end && (out[pos] == ' ' || out[pos] == '\t')) {
                ++pos;
            }
            std::size_t end = pos;
            while (end < line_end && out[end] != ' ' && out[end] != '\t') {
                ++end;
            }
            const std::string field = out.substr(pos, end - pos);
            bool hex = field.size() == width;
            for (const char c : field) {
                hex = hex && hex_char(c);
            }
            if (hex && std::find(columns.begin(), columns.end(), col) != columns.end()) {
                const std::string mapped = v4 ? hex_ipv4(field) : hex_ipv6(field);
                replaced += mapped != field ? 1 : 0;
                out.replace(pos, width, mapped);
            }
            pos = end;
        }
        line_start = line_end + 1;
    }
    count(file, v4 ? RedactKind::ipv4 : RedactKind::ipv6, replaced);
    return out;
}

std::string Redactor::path(std::string_view host_path)
{
    if (!m_options.hostnames || m_hostnames.empty()) {
        return std::string(host_path);
    }
    if (host_path.starts_with("/var/log/pve/tasks/")) {
        // UPID:NODE:PID:PSTART:STARTTIME:TYPE:ID:USER:
        return hostnames_in("", host_path, ":");
    }
    if (!host_path.starts_with("/etc/pve/")) {
        return std::string(host_path);
    }
    // Below /etc/pve only: "pve" may well be the node's name too.
    return "/etc/pve/" + hostnames_in("", host_path.substr(9), "/");
}

std::string Redactor::link_target(std::string_view host_path, std::string_view target)
{
    if (!m_options.hostnames || !host_path.starts_with("/etc/pve/")) {
        return std::string(target);
    }
    if (target.starts_with("/etc/pve/")) {
        return path(target);
    }
    return hostnames_in("", target, "/");
}

std::string Redactor::content(std::string_view host_path, std::string text)
{
    const std::string file = path(host_path);
    if (is_guest_config(host_path)) {
        text = vm_config(file, text);
    }
    if (m_options.addresses) {
        if (host_path.starts_with("/proc/net/")
            && (last_component(host_path) == "route" || last_component(host_path) == "ipv6_route"
                || last_component(host_path) == "if_inet6")) {
            text = proc_net(file, text);
        } else if (holds_addresses(host_path)) {
            text = ipv6_in(file, ipv4_in(file, text));
        }
        if (!is_binary_attr(host_path)) {
            text = macs_in(file, text);
        }
    }
    if (m_options.hostnames && names_the_node(host_path)) {
        text = hostnames_in(file, text, ":");
    }
    return text;
}

} // namespace passthru::capture
