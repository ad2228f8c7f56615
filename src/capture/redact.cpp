// SPDX-License-Identifier: GPL-2.0-or-later
#include "capture/redact.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "util/strings.hpp"

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

// The path a file is known by: /proc/self/net, /proc/thread-self/net and
// /proc/PID/net (where a live host's /proc/net symlink leads) are /proc/net.
std::string normal_path(std::string_view path)
{
    static constexpr std::string_view k_proc = "/proc/";
    if (!path.starts_with(k_proc)) {
        return std::string(path);
    }
    std::string_view rest = path.substr(k_proc.size());
    const auto digits = [](std::string_view s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos; };
    const auto first = rest.substr(0, rest.find('/'));
    if (!(digits(first) || first == "self" || first == "thread-self") || first.size() == rest.size()) {
        return std::string(path);
    }
    rest.remove_prefix(first.size() + 1);
    if (rest.starts_with("task/")) {
        const auto tid = rest.substr(5, rest.find('/', 5) == std::string_view::npos ? std::string_view::npos : rest.find('/', 5) - 5);
        if (!digits(tid) || rest.size() == 5 + tid.size()) {
            return std::string(path);
        }
        rest.remove_prefix(5 + tid.size() + 1);
    }
    return rest.starts_with("net/") ? "/proc/" + std::string(rest) : std::string(path);
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

// Files whose text is about nodes, where a known node name is one wherever
// it stands: /etc/hostname and hosts, all of /etc/pve (the cluster file
// system), corosync's files, the task logs (UPID:NODE:...).
bool names_the_node(std::string_view path)
{
    return path == "/etc/hostname" || path == "/etc/hosts" || path == "/etc/mailname" || path == "/proc/sys/kernel/hostname"
           || path.starts_with("/etc/pve/") || path.starts_with("/etc/corosync/") || path.starts_with("/var/log/pve/tasks/");
}

bool is_proc_net_table(std::string_view path)
{
    return path == "/proc/net/route" || path == "/proc/net/ipv6_route" || path == "/proc/net/if_inet6";
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

// A key whose value is a secret, in any file: *password*, *passwd*,
// *passphrase*, *secret*, *token*, *credential*, API and private keys, and
// key, keys, sshkeys, authkey, *-key, *_key.
bool secret_key(std::string_view key)
{
    const std::string k = lowercase_of(key);
    for (const std::string_view part : {"password", "passwd", "passphrase", "secret", "token", "credential", "apikey", "api_key", "api-key",
                                        "privkey", "private_key", "private-key", "psk"}) {
        if (k.find(part) != std::string::npos) {
            return true;
        }
    }
    for (const std::string_view end : {"_key", "-key", ".key", "_keys", "-keys", ".keys"}) {
        if (k.ends_with(end)) {
            return true;
        }
    }
    return k == "key" || k == "keys" || k == "sshkeys" || k == "authkey" || k == "pass" || k == "pw";
}

// A value that is no secret: empty, a flag (0, 1, yes, no, true, false, on,
// off) or already replaced.
bool flag_value(std::string_view value)
{
    const std::string v = lowercase_of(value);
    return v.empty() || v == "0" || v == "1" || v == "yes" || v == "no" || v == "true" || v == "false" || v == "on" || v == "off"
           || v == "redacted";
}

bool key_char(char c)
{
    return alnum_char(c) || c == '_' || c == '-' || c == '.';
}

// Keys whose value names a volume group, pool, store or realm, never a
// host, even when it is spelt like one (`vgname pve`).
bool object_key(std::string_view key)
{
    const std::string k = lowercase_of(key);
    return k == "vgname" || k == "thinpool" || k == "pool" || k == "datastore" || k == "vg" || k == "lv" || k == "realm" || k == "fs-name"
           || k == "subdir";
}

// Keys whose value is a host or node name, in any file.
bool host_key(std::string_view key)
{
    const std::string k = lowercase_of(key);
    return k == "node" || k == "nodes" || k == "nodename" || k == "hostname" || k == "host" || k == "server" || k == "target"
           || k.starts_with("ring");
}

// The word just before text[at] (over blanks, quotes, `=`, `:` and `,`),
// and the first word of its line.
std::pair<std::string_view, std::string_view> words_before(std::string_view text, std::size_t at)
{
    std::size_t i = at;
    while (i > 0 && std::string_view(" \t=:\"',").find(text[i - 1]) != std::string_view::npos) {
        --i;
    }
    std::size_t b = i;
    while (b > 0 && key_char(text[b - 1])) {
        --b;
    }
    const std::size_t nl = at == 0 ? std::string_view::npos : text.rfind('\n', at - 1);
    std::size_t ls = nl == std::string_view::npos ? 0 : nl + 1;
    while (ls < at && (text[ls] == ' ' || text[ls] == '\t' || text[ls] == '"')) {
        ++ls;
    }
    std::size_t le = ls;
    while (le < at && key_char(text[le])) {
        ++le;
    }
    return {text.substr(b, i - b), text.substr(ls, le - ls)};
}

// A word that may be a host name (no blanks, no path).
bool name_like(std::string_view s)
{
    if (s.empty() || s.size() > 253 || !alnum_char(s.front())) {
        return false;
    }
    return std::all_of(s.begin(), s.end(), [](char c) { return alnum_char(c) || c == '-' || c == '.' || c == '_'; });
}

bool is_address(std::string_view s)
{
    std::array<std::uint8_t, 16> buf{};
    const std::string t(s);
    return ::inet_pton(AF_INET, t.c_str(), buf.data()) == 1 || ::inet_pton(AF_INET6, t.c_str(), buf.data()) == 1;
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
    if (name.empty() || name == "localhost" || name == "localhost.localdomain" || !name_like(name)) {
        return;
    }
    m_hostnames.emplace(name);
    if (const auto dot = name.find('.'); dot != std::string_view::npos && dot > 0) {
        m_hostnames.emplace(name.substr(0, dot));
        if (dot + 1 < name.size()) {
            m_domains.emplace(name.substr(dot + 1));
        }
    }
}

void Redactor::learn(std::string_view host_path, std::string_view text)
{
    const std::string path = normal_path(host_path);
    const auto lines = [&text](const auto& each) {
        std::size_t start = 0;
        while (start < text.size()) {
            const std::size_t end = std::min(text.find('\n', start), text.size());
            each(util::trim(text.substr(start, end - start)));
            start = end + 1;
        }
    };
    const auto words = [](std::string_view line, const auto& each) {
        std::size_t i = 0;
        while (i < line.size()) {
            const std::size_t b = line.find_first_not_of(" \t,", i);
            if (b == std::string_view::npos) {
                break;
            }
            const std::size_t e = std::min(line.find_first_of(" \t,", b), line.size());
            each(line.substr(b, e - b));
            i = e;
        }
    };
    if (path == "/etc/hostname" || path == "/etc/mailname" || path == "/proc/sys/kernel/hostname") {
        add_hostname(util::trim(text.substr(0, text.find('\n'))));
    } else if (path == "/etc/hosts") {
        lines([&](std::string_view line) {
            bool first = true;
            words(line.substr(0, line.find('#')), [&](std::string_view w) {
                if (!first && w.find('.') != std::string_view::npos && name_like(w)) {
                    m_host_aliases.emplace(w);
                }
                first = false;
            });
        });
    } else if (path == "/etc/resolv.conf") {
        lines([&](std::string_view line) {
            if (line.starts_with("domain") || line.starts_with("search")) {
                words(line.substr(6), [&](std::string_view w) { m_domains.emplace(w); });
            }
        });
    }
    if (path.ends_with("/corosync.conf") && (path.starts_with("/etc/pve/") || path.starts_with("/etc/corosync/"))) {
        lines([&](std::string_view line) {
            const auto colon = line.find(':');
            const std::string_view key = util::trim(line.substr(0, colon));
            const std::string_view value = colon == std::string_view::npos ? std::string_view() : util::trim(line.substr(colon + 1));
            if (key == "name" || (key.starts_with("ring") && key.ends_with("_addr") && !is_address(value))) {
                add_hostname(value);
            }
        });
    }
    // UPID:NODE:PID:... (a task's id, in a task list, a log or its name)
    for (std::size_t at = text.find("UPID:"); at != std::string_view::npos; at = text.find("UPID:", at + 5)) {
        const std::size_t b = at + 5;
        const std::size_t e = text.find(':', b);
        if (e != std::string_view::npos && e - b <= 63) {
            add_hostname(text.substr(b, e - b));
        }
    }
    if (path.starts_with("/etc/pve/")) {
        // node=NAME in a mapping, `nodes A,B` of a storage
        for (std::size_t at = text.find("node="); at != std::string_view::npos; at = text.find("node=", at + 5)) {
            if (at > 0 && key_char(text[at - 1])) {
                continue;
            }
            const std::size_t b = at + 5;
            const std::size_t e = std::min(text.find_first_of(", \t\n;", b), text.size());
            add_hostname(text.substr(b, e - b));
        }
        lines([&](std::string_view line) {
            if (line.starts_with("nodes ") || line.starts_with("nodes\t") || line.starts_with("nodes=")) {
                words(line.substr(6), [&](std::string_view w) { add_hostname(w); });
            }
        });
    }
}

bool Redactor::known_name(std::string_view token) const
{
    if (m_hostnames.contains(std::string(token))) {
        return true;
    }
    const auto dot = token.find('.');
    if (dot == std::string_view::npos || dot == 0 || token.find('/') != std::string_view::npos
        || !m_hostnames.contains(std::string(token.substr(0, dot)))) {
        return false;
    }
    // NAME.DOMAIN: a domain of the host's, or a name /etc/hosts gives
    return m_domains.contains(std::string(token.substr(dot + 1))) || m_host_aliases.contains(std::string(token));
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

std::string Redactor::hostnames_in(std::string_view file, std::string_view text, std::string_view separators, bool everywhere)
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
        bool replace = known_name(token);
        if (replace) {
            // Where the word stands as something else: a realm (alice@pve),
            // a volume group or pool (vgname pve). Outside the files about
            // nodes, only a name with its domain or a host key's value.
            const auto [prev, line_key] = words_before(text, i);
            const bool realm = i > 0 && text[i - 1] == '@';
            const bool object = object_key(prev) || object_key(line_key);
            const bool as_host = everywhere || token.find('.') != std::string_view::npos || host_key(prev) || host_key(line_key);
            replace = !realm && !object && as_host;
        }
        if (replace) {
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

namespace {

// KEY=VALUE and "KEY": "VALUE" anywhere in LINE: each secret value, to the next blank,
// comma, semicolon, ampersand or quote, goes; the line is appended to OUT. Returns how
// many went.
std::size_t inline_secrets(std::string_view line, std::string& out)
{
    std::size_t found = 0;
    std::size_t i = 0;
    while (i < line.size()) {
        if (!key_char(line[i]) || (i > 0 && key_char(line[i - 1]))) {
            out += line[i++];
            continue;
        }
        std::size_t e = i;
        while (e < line.size() && key_char(line[e])) {
            ++e;
        }
        std::size_t vs = e;
        if (vs < line.size() && line[vs] == '"') {
            ++vs;
        }
        const bool eq = vs < line.size() && (line[vs] == '=' || (line[vs] == ':' && vs > e));
        if (eq) {
            ++vs;
            while (vs < line.size() && (line[vs] == ' ' || line[vs] == '"')) {
                ++vs;
            }
        }
        const std::size_t ve = eq ? std::min(line.find_first_of(" \t,;&\"'\r", vs), line.size()) : vs;
        if (eq && secret_key(line.substr(i, e - i)) && !flag_value(line.substr(vs, ve - vs))) {
            out += line.substr(i, vs - i);
            out += "redacted";
            ++found;
        } else {
            out += line.substr(i, ve - i);
        }
        i = ve;
    }
    return found;
}

} // namespace

std::string Redactor::secrets_in(std::string_view file, std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    std::size_t secrets = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        end = end == std::string_view::npos ? text.size() : end;
        const std::string_view line = text.substr(start, end - start);
        // KEY VALUE, KEY: VALUE, KEY=VALUE, "KEY": VALUE at the line's start
        // (after blanks and a comment sign): the rest of the line goes.
        std::size_t k = line.find_first_not_of(" \t#;\"'");
        k = k == std::string_view::npos ? line.size() : k;
        std::size_t ke = k;
        while (ke < line.size() && key_char(line[ke])) {
            ++ke;
        }
        std::size_t v = ke;
        while (v < line.size() && (line[v] == '"' || line[v] == '\'')) {
            ++v;
        }
        const std::size_t blanks = v;
        while (v < line.size() && (line[v] == ' ' || line[v] == '\t')) {
            ++v;
        }
        const bool sep = v < line.size() && (line[v] == ':' || line[v] == '=');
        if (sep) {
            ++v;
            while (v < line.size() && (line[v] == ' ' || line[v] == '\t')) {
                ++v;
            }
        }
        std::string_view value = v < line.size() ? line.substr(v) : std::string_view();
        while (!value.empty() && (value.back() == '\r' || value.back() == ' ' || value.back() == '\t')) {
            value.remove_suffix(1);
        }
        const bool keyed = ke > k && (sep || blanks < v);
        const char quote = value.empty() ? '\0' : value.front();
        const std::size_t close = quote == '"' || quote == '\'' ? value.find(quote, 1) : std::string_view::npos;
        if (close != std::string_view::npos) {
            value = value.substr(1, close - 1); // "KEY": "VALUE": the quotes stay
            ++v;
        }
        if (keyed && secret_key(line.substr(k, ke - k)) && !flag_value(value)) {
            out += line.substr(0, v);
            out += "redacted";
            out += line.substr(v + value.size());
            ++secrets;
        } else {
            secrets += inline_secrets(line, out);
        }
        if (end < text.size()) {
            out += '\n';
        }
        start = end + 1;
    }
    count(file, RedactKind::secret, secrets);
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
    // The free text of a guest config goes: its comments (the description
    // Proxmox VE keeps as # lines), description:, args: and every serial=.
    std::string out;
    std::size_t secrets = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        end = end == std::string_view::npos ? text.size() : end + 1;
        const std::string_view line = text.substr(start, end - start);
        const std::string_view nl = line.ends_with('\n') ? "\n" : "";
        const auto colon = line.find(':');
        const std::string_view key = colon == std::string_view::npos ? std::string_view() : line.substr(0, colon);
        if (line.starts_with('#')) {
            out += "#redacted";
            out += nl;
            ++secrets;
        } else if (!line.starts_with('[') && (key == "description" || key == "args" || secret_key(key))) {
            out += key;
            out += ": redacted";
            out += nl;
            ++secrets;
        } else {
            std::string rest(line);
            for (std::size_t at = rest.find("serial="); at != std::string::npos; at = rest.find("serial=", at + 7)) {
                if (at > 0 && key_char(rest[at - 1])) {
                    continue;
                }
                const std::size_t b = at + 7;
                const std::size_t e = std::min(rest.find_first_of(",\n", b), rest.size());
                if (rest.compare(b, e - b, "redacted") != 0) {
                    rest.replace(b, e - b, "redacted");
                    ++secrets;
                }
            }
            out += rest;
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
    const std::string known_as = normal_path(host_path);
    if (is_binary_attr(known_as)) {
        return text;
    }
    if (is_guest_config(known_as)) {
        text = vm_config(file, text);
    }
    text = secrets_in(file, text);
    if (m_options.addresses) {
        if (is_proc_net_table(known_as)) {
            text = proc_net(file, text);
        }
        text = macs_in(file, ipv6_in(file, ipv4_in(file, text)));
    }
    if (m_options.hostnames) {
        text = hostnames_in(file, text, ":", names_the_node(known_as));
    }
    return text;
}

} // namespace passthru::capture
