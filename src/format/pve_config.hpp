// SPDX-License-Identifier: GPL-2.0-or-later
// Proxmox VE VM config files (/etc/pve/qemu-server/<vmid>.conf) read and
// edited line by line: every line the plan does not change is written back
// byte for byte (comments, order, [PENDING], [special:*] and snapshot
// sections, even lines PVE would ignore). Grammar: docs/facts.md: vm-config.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace passthru::format::pve {

enum class LineKind
{
    blank,
    comment,   // "#..." (part of the description)
    key_value, // "key: value"
    section,   // "[PENDING]", "[special:cloudinit]", "[snapname]"
    unknown,   // anything else; PVE ignores it, we keep it
};

struct ConfigLine
{
    std::string text; // verbatim, without the line feed
    LineKind kind = LineKind::unknown;
    std::string key;   // key_value: the key; section: the name inside the brackets
    std::string value; // key_value: the value with surrounding white space removed
};

struct ConfigSection
{
    std::string name;              // "" for the current config, else the bracket name
    std::vector<ConfigLine> lines; // for named sections the first line is the header
};

// A VM config file as a list of sections of verbatim lines.
class VmConfig
{
public:
    static VmConfig parse(std::string_view text);
    // The file again: identical to the parsed text unless set()/remove() were called.
    std::string str() const;

    // Value of key in a section ("" = the current config, "PENDING", a snapshot name).
    std::optional<std::string> get(std::string_view key, std::string_view section = "") const;
    // Every key: value of a section in file order.
    std::vector<std::pair<std::string, std::string>> entries(std::string_view section = "") const;
    // Sets a key of the current config. An existing line is rewritten in
    // place; a new one goes where PVE's writer (sorted keys) would put it.
    // A key or value that is not one line of text (format/grammar.hpp) is
    // refused: throws Error(Errc::precondition).
    void set(std::string_view key, std::string_view value);
    // Removes a key of the current config; false when it was absent.
    bool remove(std::string_view key);

    bool has_section(std::string_view name) const;
    // Names of the sections after the current config, in file order.
    std::vector<std::string> section_names() const;
    // Keys the [PENDING] section sets, plus the keys its "delete:" line lists.
    std::vector<std::string> pending_keys() const;

private:
    const ConfigSection* find_section(std::string_view name) const;
    std::vector<ConfigSection> m_sections;
    bool m_trailing_newline = true;
};

// True when key matches PVE's key grammar ^[a-z][a-z_\-]*\d*$.
bool valid_key(std::string_view key);

// A property string ("0000:01:00,pcie=1", "host,hidden=1"): its parts in
// order, the default-key part with an empty key.
struct PropertyString
{
    std::vector<std::pair<std::string, std::string>> parts;

    static PropertyString parse(std::string_view text);
    // Parts joined with ',', the default-key value first and the rest
    // sorted by key, as PVE's print_property_string does.
    std::string str() const;
    std::optional<std::string> get(std::string_view key) const;
    void set(std::string_view key, std::string_view value);
    void remove(std::string_view key);
};

// PVE booleans: 1|on|yes|true and 0|off|no|false, case-insensitive.
std::optional<bool> parse_boolean(std::string_view text);

// A hostpciN value: the raw host ids (split on ';') or a mapping name.
struct HostPci
{
    std::vector<std::string> host_ids; // "0000:01:00", "01:00.0"
    std::optional<std::string> mapping;
    PropertyString options; // everything as written

    static HostPci parse(std::string_view value);
};

// True when the PCI function address (like "0000:01:00.1") is selected by a
// hostpci id the way PVE's lspci filter matches: a prefix match with an
// optional "0000:" (pve-common SysFSTools.pm, docs/facts.md: vm-config).
bool hostpci_id_covers(std::string_view id, std::string_view function_address);

// hostpci id syntax: (domain:)?bus:slot(.fn)?, lowercase hex (docs/facts.md: vm-config).
bool valid_hostpci_id(std::string_view id);

// A q35 machine type as PVE names it: q35 or pc-q35-X.Y[.Z][+pveN][.pxe] (docs/facts.md: vm-config).
bool valid_q35_machine(std::string_view machine);

} // namespace passthru::format::pve
