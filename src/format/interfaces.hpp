// SPDX-License-Identifier: GPL-2.0-or-later
// A lossless model of /etc/network/interfaces (Debian interfaces(5) as read
// by ifupdown2 and Proxmox VE): parse, inspect, edit, write back. Every byte
// that no edit touches is written back unchanged, so parse() followed by
// text() returns the input exactly.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace passthru::format {

enum class IfLineKind
{
    blank,            // only white space
    comment,          // first non-blank character is '#'
    auto_,            // auto IFACE...
    allow,            // allow-CLASS IFACE...
    iface,            // iface NAME [FAMILY METHOD]
    mapping,          // mapping PATTERN... (ifupdown only)
    vlan,             // vlan NAME (ifupdown2)
    source,           // source PATH-OR-GLOB
    source_directory, // source-directory DIR (ifupdown only)
    no_auto_down,     // no-auto-down IFACE... (ifupdown only)
    no_scripts,       // no-scripts IFACE... (ifupdown only)
    rename,           // rename CUR=NEW (ifupdown only)
    option,           // a "key value" line inside a stanza
    stray,            // text outside any stanza that is no keyword (kept as is)
};

// One logical line: a physical line plus the lines it continues onto with a
// trailing backslash.
struct IfLine
{
    std::string raw; // exact bytes, continuation lines and the final '\n' included
    IfLineKind kind = IfLineKind::blank;
    std::vector<std::string> words; // white-space separated words after joining continuations
    std::size_t line_number = 0;    // 1-based number of the first physical line (0 for added lines)

    // "address" for an option line, the keyword otherwise; empty for blank/comment.
    std::string_view keyword() const { return words.empty() ? std::string_view() : std::string_view(words[0]); }
    // Everything after the keyword, words joined by one space.
    std::string value() const;
};

// An iface stanza: its header line and the option lines that follow it.
struct IfaceStanza
{
    std::size_t header = 0; // index into lines()
    std::string name;
    std::string family;               // "inet", "inet6", ... (may be empty: ifupdown2 allows "iface x")
    std::string method;               // "static", "manual", "dhcp", ... (may be empty)
    std::vector<std::size_t> options; // indices of its option lines, in order
    std::size_t end = 0;              // one past its last option line (or header + 1)
};

// Where set_option puts a line the stanza does not have yet.
enum class OptionPlace
{
    last,  // after the stanza's last option
    first, // right after the iface line (PVE puts address/gateway first)
};

class InterfacesFile
{
public:
    // Never fails: lines that are not understood are kept as IfLineKind::stray.
    static InterfacesFile parse(std::string_view text);

    // The file as it would be written now (byte-identical to the input when nothing was edited).
    std::string text() const;
    const std::vector<IfLine>& lines() const noexcept { return m_lines; }
    // Lines that are neither stanza keywords nor stanza options (reported, kept).
    std::vector<std::size_t> stray_lines() const;

    std::vector<IfaceStanza> stanzas() const;
    // Every stanza named `name` (one per address family, usually).
    std::vector<IfaceStanza> find(std::string_view name) const;
    // The stanza of `name` with this family; nullopt when absent.
    std::optional<IfaceStanza> find(std::string_view name, std::string_view family) const;
    // Index of the first option line `key` in a stanza; nullopt when absent.
    std::optional<std::size_t> find_option(const IfaceStanza& stanza, std::string_view key) const;
    // Value of the first option line `key`.
    std::optional<std::string> option(const IfaceStanza& stanza, std::string_view key) const;
    // Names listed on auto / allow-auto lines.
    bool is_auto(std::string_view name) const;
    // The `source` / `source-directory` arguments, in order.
    std::vector<std::string> sources() const;

    // The indentation used for option lines (that of the first option line; a tab when none).
    std::string option_indent() const;
    // The line ending used ("\n" or "\r\n").
    std::string_view eol() const noexcept { return m_eol; }

    // --- edits (indices of later lines shift; re-query stanzas after each) ---

    // Sets `key value` in the stanza: rewrites the first `key` line when its
    // value differs (keeping its indentation), removes further `key` lines,
    // or appends a line after the stanza's last option. Returns true when
    // the text changed.
    bool set_option(std::string_view name, std::string_view family, std::string_view key, std::string_view value,
                    OptionPlace place = OptionPlace::last);
    // Removes every `key` line of the stanza. Returns true when one existed.
    bool remove_option(std::string_view name, std::string_view family, std::string_view key);
    // Replaces the method word of the header ("static" -> "manual").
    bool set_method(std::string_view name, std::string_view family, std::string_view method);
    // Inserts a block of text (whole lines, ending in a newline) before line
    // index `pos` (lines().size() appends). Returns the index of its first line.
    std::size_t insert_text(std::size_t pos, std::string_view text);
    // Removes one logical line.
    void remove_line(std::size_t index);
    // Replaces one logical line with new words, keeping its indentation and line ending.
    void rewrite_line(std::size_t index, const std::vector<std::string>& words);
    // Removes `name` from auto lines (a line naming only it disappears).
    bool remove_auto(std::string_view name);

private:
    void classify(); // recomputes kinds after an edit
    std::vector<IfLine> m_lines;
    std::string m_eol = "\n";
};

// Words joined by one space.
std::string join_words(const std::vector<std::string>& words);

// Debian interfaces(5) stanza keywords (plus ifupdown2's "vlan"); options are all other words.
bool is_interfaces_keyword(std::string_view word);

} // namespace passthru::format
