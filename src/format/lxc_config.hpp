// SPDX-License-Identifier: GPL-2.0-or-later
// Proxmox VE container configs (/etc/pve/lxc/<vmid>.conf) read line by line:
// every line comes back byte for byte. Besides PVE's own "key: value" lines a
// container config carries raw LXC keys ("lxc.mount.entry: ...", also written
// "lxc.key = value"), the devN: passthrough entries (PVE 8.1+), a
// [pve:pending] section and snapshot sections. Grammar: docs/facts.md: lxc-config.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace passthru::format::lxc {

enum class LineKind
{
    blank,
    comment,   // "#..." (the description)
    key_value, // a PVE key: "dev0: /dev/nvidia0,gid=44"
    raw_lxc,   // "lxc.KEY: value" or "lxc.KEY = value"
    section,   // "[pve:pending]", "[snapname]"
    unknown,   // anything else; PVE warns and ignores it, we keep it
};

struct CtLine
{
    std::string text; // verbatim, without the line feed
    LineKind kind = LineKind::unknown;
    std::string key;        // key_value / raw_lxc: the key; section: the name inside the brackets
    std::string value;      // key_value / raw_lxc: the value with surrounding white space removed
    std::size_t number = 0; // 1-based line number in the file
    std::string section;    // the section the line belongs to ("" = the current config)
};

// A container config as its lines, each with its section.
class CtConfig
{
public:
    static CtConfig parse(std::string_view text);
    // The file again: identical to the parsed text.
    std::string str() const;
    const std::vector<CtLine>& lines() const noexcept { return m_lines; }
    // The value of a PVE key in a section ("" = the current config).
    std::optional<std::string> get(std::string_view key, std::string_view section = "") const;
    // True when the current config says unprivileged: 1 (PVE's default for a config is 0).
    bool unprivileged() const;
    // The file with NEW_LINES (each one line, no line feed) put before lines()[at]
    // (at == lines().size(): after the last line); every other line byte for byte.
    std::string with_inserted(std::size_t at, const std::vector<std::string>& new_lines) const;
    // Where a new devN: line of the current config goes, as Proxmox VE writes
    // its keys in order: after the current config's last devN: line, else before
    // its first key that sorts after "dev", else after its last line that is not
    // blank (before the first section).
    std::size_t dev_insert_point() const;

private:
    std::vector<CtLine> m_lines;
    bool m_trailing_newline = true;
};

// The pending section of a container config ([pve:pending], case-insensitive).
inline constexpr std::string_view k_pending_section = "pve:pending";

// "devN" with N in 0..255 (pve-container's $MAX_DEVICES); nullopt otherwise.
std::optional<int> dev_index(std::string_view key);

// A devN: value: path[,mode=0NNN][,uid=N][,gid=N][,deny-write=BOOL]
// (pve-container PVE::LXC::Config $dev_desc). nullopt when PVE would refuse it.
struct DevEntry
{
    std::string path; // starts with /dev/, no /./ or /../ component
    std::optional<std::string> mode;
    std::optional<std::uint32_t> uid;
    std::optional<std::uint32_t> gid;
    bool deny_write = false;

    static std::optional<DevEntry> parse(std::string_view value);
};

// The host path an lxc.mount.entry binds (its first field), nullopt when the
// value has no field. "/dev/nvidia0 dev/nvidia0 none bind,optional,create=file".
std::optional<std::string> mount_entry_source(std::string_view value);

// An lxc.cgroup2.devices.allow (or .deny) value: "c 195:* rwm", "a".
struct DeviceRule
{
    char type = 'a';                    // 'a' (all), 'c' or 'b'
    std::optional<std::uint32_t> major; // nullopt: '*'
    std::optional<std::uint32_t> minor; // nullopt: '*'
    std::string access;                 // "rwm" and its subsets

    static std::optional<DeviceRule> parse(std::string_view value);
    // True when the rule covers the character device major:minor.
    bool covers_char(std::uint32_t dev_major, std::uint32_t dev_minor) const;
};

} // namespace passthru::format::lxc
