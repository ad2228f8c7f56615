// SPDX-License-Identifier: GPL-2.0-or-later
// What passthru capture removes from the files it packs, decided by what a
// value is wherever it appears (never by which file it is in): secrets (the
// value of a password/secret/token/key-like key in any `key=value`,
// `key: value` or `key value` line), IP and MAC addresses, the host's and
// the cluster's node names where they stand as names, and the free text of
// VM configs (comments, description, args, disk serials). Paths are
// normalised first (/proc/PID/net is /proc/net). Text in, text out (no host
// access). Each
// value is replaced the same way everywhere in one capture, so the packed
// tree stays consistent (the node name of /etc/hostname is the one of
// /etc/pve/nodes/NAME/ and of every UPID), and parseable (a MAC becomes a
// locally administered MAC, an IP address one of a documentation range with
// its prefix length kept).
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace passthru::capture {

enum class RedactKind
{
    secret,   // a secret-like key's value, or VM config free text
    ipv4,     // an IPv4 address, in text or in /proc/net hex
    ipv6,     // an IPv6 address, in text or in /proc/net hex
    mac,      // a MAC address
    hostname, // a host (node) name, in a file or a path
};

std::string_view to_string(RedactKind kind);

struct RedactOptions
{
    bool hostnames = true; // false: --keep-hostnames
    bool addresses = true; // false: --keep-addresses (IP and MAC addresses)
};

class Redactor
{
public:
    explicit Redactor(RedactOptions options) : m_options(options) {}

    // A host name to replace ("pve", "pve.example.com"): from /etc/hostname
    // and the node directories of /etc/pve/nodes. Call before any redaction.
    void add_hostname(std::string_view name);
    // Learns the node names and the host's domain a file names: the whole
    // of /etc/hostname, the nodelist of corosync.conf (name:, ringN_addr:
    // when not an address), node=/nodes values of /etc/pve, the names
    // /etc/hosts gives the host, resolv.conf's domain and search, the node
    // of every UPID (in any text; pass a path as text for the UPIDs of a
    // task log's name). Call for every file capture packs or knows of
    // before any redaction.
    void learn(std::string_view host_path, std::string_view text);

    // The host path under which a file is packed: a node name as a path
    // component of /etc/pve (nodes/NAME) or inside a UPID file name of
    // /var/log/pve/tasks replaced.
    std::string path(std::string_view host_path);
    // The target of the symlink at host_path (/etc/pve/local -> nodes/NAME).
    std::string link_target(std::string_view host_path, std::string_view target);
    // The contents of the file at host_path (its original path), redacted
    // according to the kind of file the path names.
    std::string content(std::string_view host_path, std::string text);

    // Replacements made, by (packed file, kind): never the values.
    const std::map<std::pair<std::string, RedactKind>, std::size_t>& counts() const noexcept { return m_counts; }

    // The replacements of single values (exposed for the unit tests).
    std::string map_ipv4(std::string_view address);
    std::string map_ipv6(std::string_view address);
    std::string map_mac(std::string_view address);
    std::string map_hostname(std::string_view name);

private:
    void count(std::string_view file, RedactKind kind, std::size_t n = 1);
    std::string hostnames_in(std::string_view file, std::string_view text, std::string_view separators, bool everywhere = true);
    std::string secrets_in(std::string_view file, std::string_view text);
    bool known_name(std::string_view token) const;
    std::string macs_in(std::string_view file, std::string_view text);
    std::string ipv4_in(std::string_view file, std::string_view text);
    std::string ipv6_in(std::string_view file, std::string_view text);
    std::string vm_config(std::string_view file, std::string_view text);
    std::string proc_net(std::string_view file, std::string_view text);
    std::string hex_ipv4(std::string_view hex);
    std::string hex_ipv6(std::string_view hex);

    RedactOptions m_options;
    std::set<std::string> m_hostnames;
    std::set<std::string> m_domains;      // the host's DNS domains ("example.com")
    std::set<std::string> m_host_aliases; // the dotted names of /etc/hosts
    std::map<std::string, std::string> m_host_map;
    std::map<std::string, std::string> m_v4_net;  // "10.1.2" -> "192.0.2"
    std::map<std::string, std::string> m_v6_net;  // first 64 bits -> 2001:db8:0:N
    std::map<std::string, std::string> m_v6_host; // last 64 bits -> a small number
    std::map<std::string, std::string> m_mac_map;
    std::map<std::pair<std::string, RedactKind>, std::size_t> m_counts;
};

} // namespace passthru::capture
