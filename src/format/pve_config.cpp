// SPDX-License-Identifier: GPL-2.0-or-later
#include "format/pve_config.hpp"

#include <algorithm>

#include "format/grammar.hpp"
#include "util/error.hpp"
#include "util/lex.hpp"
#include "util/strings.hpp"

namespace passthru::format::pve {

namespace {

namespace lex = util::lex;

// qemu-server QemuServer.pm parse_vm_config: key lines and section headers,
// matched by hand in constant stack (see util/lex.hpp).

// [a-z][a-z_-]*\d* : the length of the key at the start of `s`, 0 when none.
std::size_t key_length(std::string_view s)
{
    if (s.empty() || !lex::is_lower(s.front())) {
        return 0;
    }
    std::size_t n = 1 + lex::span(s, 1, [](char c) { return lex::is_lower(c) || c == '_' || c == '-'; });
    return n + lex::span(s, n, lex::is_digit);
}

// ^\[([^\]]+)\]\s*$
bool match_section(std::string_view text, std::string& name)
{
    if (!text.starts_with('[')) {
        return false;
    }
    const auto close = text.find(']', 1);
    if (close == std::string_view::npos || close == 1 || !util::trim(text.substr(close + 1)).empty()) {
        return false;
    }
    name = std::string(text.substr(1, close - 1));
    return true;
}

// ^(KEY):\s*(.+?)\s*$ where '.' is anything but a line terminator ('\r' here).
bool match_key_line(std::string_view text, std::string& key, std::string& value)
{
    const std::size_t n = key_length(text);
    if (n == 0 || n >= text.size() || text[n] != ':') {
        return false;
    }
    const std::string_view rest = text.substr(n + 1);
    std::string_view v = util::trim(rest);
    if (v.empty()) {
        // All white space: the lazy group still takes one character, the last that is not '\r'.
        const auto last = rest.find_last_not_of('\r');
        if (last == std::string_view::npos) {
            return false;
        }
        v = rest.substr(last, 1);
    }
    if (v.find('\r') != std::string_view::npos) {
        return false;
    }
    key = std::string(text.substr(0, n));
    value = std::string(v);
    return true;
}

ConfigLine classify(std::string text)
{
    ConfigLine line;
    line.text = std::move(text);
    const std::string_view trimmed = util::trim(line.text);
    if (trimmed.empty()) {
        line.kind = LineKind::blank;
    } else if (line.text.front() == '#') {
        line.kind = LineKind::comment;
    } else if (match_section(line.text, line.key)) {
        line.kind = LineKind::section;
    } else if (match_key_line(line.text, line.key, line.value)) {
        line.kind = LineKind::key_value;
    } else {
        line.kind = LineKind::unknown;
    }
    return line;
}

// [a-f0-9]{2}
bool two_hex(std::string_view s)
{
    return s.size() == 2 && lex::all_of(s, lex::is_xdigit_lower);
}

} // namespace

VmConfig VmConfig::parse(std::string_view text)
{
    VmConfig config;
    config.m_sections.push_back(ConfigSection{});
    config.m_trailing_newline = text.empty() || text.back() == '\n';
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        ConfigLine line = classify(std::string(text.substr(pos, end - pos)));
        if (line.kind == LineKind::section) {
            config.m_sections.push_back(ConfigSection{line.key, {}});
        }
        config.m_sections.back().lines.push_back(std::move(line));
        pos = end + 1;
    }
    return config;
}

std::string VmConfig::str() const
{
    std::string out;
    bool first = true;
    for (const auto& section : m_sections) {
        for (const auto& line : section.lines) {
            if (!first) {
                out += '\n';
            }
            out += line.text;
            first = false;
        }
    }
    if (!first && m_trailing_newline) {
        out += '\n';
    }
    return out;
}

const ConfigSection* VmConfig::find_section(std::string_view name) const
{
    for (const auto& section : m_sections) {
        if (section.name == name) {
            return &section;
        }
    }
    return nullptr;
}

std::optional<std::string> VmConfig::get(std::string_view key, std::string_view section) const
{
    const ConfigSection* s = find_section(section);
    if (s == nullptr) {
        return std::nullopt;
    }
    // PVE keeps the last occurrence of a key.
    std::optional<std::string> value;
    for (const auto& line : s->lines) {
        if (line.kind == LineKind::key_value && line.key == key) {
            value = line.value;
        }
    }
    return value;
}

std::vector<std::pair<std::string, std::string>> VmConfig::entries(std::string_view section) const
{
    std::vector<std::pair<std::string, std::string>> out;
    if (const ConfigSection* s = find_section(section)) {
        for (const auto& line : s->lines) {
            if (line.kind == LineKind::key_value) {
                out.emplace_back(line.key, line.value);
            }
        }
    }
    return out;
}

void VmConfig::set(std::string_view key, std::string_view value)
{
    // The last stop before the file: a line break in a value would be a line
    // (a key) of its own, whatever the planner that set it checked before.
    for (const auto part : {key, value}) {
        if (auto bad = invalid_value(Grammar::line_text, part, "the VM config's " + std::string(key))) {
            throw Error(Errc::precondition, "refused: " + *bad);
        }
    }
    auto& lines = m_sections.front().lines;
    const std::string text = std::string(key) + ": " + std::string(value);
    bool replaced = false;
    for (auto it = lines.begin(); it != lines.end();) {
        if (it->kind == LineKind::key_value && it->key == key) {
            if (replaced) {
                it = lines.erase(it); // a duplicate: PVE would keep only one
                continue;
            }
            *it = classify(text);
            replaced = true;
        }
        ++it;
    }
    if (replaced) {
        return;
    }
    // PVE's writer emits keys in sorted (byte) order: insert before the first
    // greater key, else after the last key (or the description).
    std::size_t insert_at = 0;
    bool seen_key = false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].kind == LineKind::key_value) {
            if (lines[i].key > key) {
                insert_at = i;
                break;
            }
            insert_at = i + 1;
            seen_key = true;
        } else if (lines[i].kind == LineKind::comment && !seen_key) {
            insert_at = i + 1;
        }
    }
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(insert_at), classify(text));
    if (lines.size() == 1 && m_sections.size() == 1) {
        m_trailing_newline = true;
    }
}

bool VmConfig::remove(std::string_view key)
{
    auto& lines = m_sections.front().lines;
    const auto before = lines.size();
    std::erase_if(lines, [&](const ConfigLine& line) { return line.kind == LineKind::key_value && line.key == key; });
    return lines.size() != before;
}

bool VmConfig::has_section(std::string_view name) const
{
    return !name.empty() && find_section(name) != nullptr;
}

std::vector<std::string> VmConfig::section_names() const
{
    std::vector<std::string> names;
    for (std::size_t i = 1; i < m_sections.size(); ++i) {
        names.push_back(m_sections[i].name);
    }
    return names;
}

std::vector<std::string> VmConfig::pending_keys() const
{
    std::vector<std::string> keys;
    for (const auto& [key, value] : entries("PENDING")) {
        if (key == "delete") {
            for (auto& k : util::split(value, ",")) {
                std::string name(util::trim(k));
                if (!name.empty() && name.front() == '!') {
                    name.erase(0, 1); // "!key" = forced delete
                }
                keys.push_back(name);
            }
        } else {
            keys.push_back(key);
        }
    }
    return keys;
}

bool valid_key(std::string_view key)
{
    return !key.empty() && key_length(key) == key.size();
}

PropertyString PropertyString::parse(std::string_view text)
{
    PropertyString ps;
    for (const auto& part : util::split(text, ",")) {
        const auto eq = part.find('=');
        if (eq == std::string::npos) {
            ps.parts.emplace_back("", part);
        } else {
            ps.parts.emplace_back(part.substr(0, eq), part.substr(eq + 1));
        }
    }
    return ps;
}

std::string PropertyString::str() const
{
    std::vector<std::pair<std::string, std::string>> sorted = parts;
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string out;
    for (const auto& [key, value] : sorted) {
        if (!out.empty()) {
            out += ',';
        }
        out += key.empty() ? value : key + "=" + value;
    }
    return out;
}

std::optional<std::string> PropertyString::get(std::string_view key) const
{
    for (const auto& [k, v] : parts) {
        if (k == key) {
            return v;
        }
    }
    return std::nullopt;
}

void PropertyString::set(std::string_view key, std::string_view value)
{
    for (auto& [k, v] : parts) {
        if (k == key) {
            v = value;
            return;
        }
    }
    parts.emplace_back(key, value);
}

void PropertyString::remove(std::string_view key)
{
    std::erase_if(parts, [&](const auto& p) { return p.first == key; });
}

std::optional<bool> parse_boolean(std::string_view text)
{
    const std::string v = util::to_lower(text);
    if (v == "1" || v == "on" || v == "yes" || v == "true") {
        return true;
    }
    if (v == "0" || v == "off" || v == "no" || v == "false") {
        return false;
    }
    return std::nullopt;
}

HostPci HostPci::parse(std::string_view value)
{
    HostPci hp;
    hp.options = PropertyString::parse(value);
    std::optional<std::string> host = hp.options.get("");
    if (!host) {
        host = hp.options.get("host");
    }
    if (host) {
        hp.host_ids = util::split(*host, ";");
    }
    hp.mapping = hp.options.get("mapping");
    return hp;
}

bool hostpci_id_covers(std::string_view id, std::string_view function_address)
{
    const std::string filter = util::to_lower(util::trim(id));
    const std::string addr = util::to_lower(function_address);
    if (filter.empty()) {
        return false;
    }
    if (addr.starts_with(filter)) {
        return true;
    }
    return addr.starts_with("0000:") && addr.substr(5).starts_with(filter);
}

bool valid_hostpci_id(std::string_view id)
{
    // (?:[a-f0-9]{4,}:)?[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?
    const auto parts = util::split_exact(id, ':');
    if (parts.size() != 2 && parts.size() != 3) {
        return false;
    }
    std::size_t i = 0;
    if (parts.size() == 3 && (parts[i++].size() < 4 || !lex::all_of(parts[0], lex::is_xdigit_lower))) {
        return false;
    }
    std::string_view slot = parts[i + 1];
    if (slot.size() == 4 && slot[2] == '.' && lex::is_xdigit_lower(slot[3])) {
        slot = slot.substr(0, 2);
    }
    return two_hex(parts[i]) && two_hex(slot);
}

bool valid_q35_machine(std::string_view machine)
{
    // q35 | pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?
    std::string_view s = machine;
    if (s == "q35") {
        return true;
    }
    if (!lex::eat(s, "pc-q35-") || lex::eat_span(s, lex::is_digit) == 0) {
        return false;
    }
    int groups = 0;
    while (s.size() >= 2 && s[0] == '.' && lex::is_digit(s[1])) {
        s.remove_prefix(1);
        lex::eat_span(s, lex::is_digit);
        ++groups;
    }
    if (groups == 0) {
        return false;
    }
    if (lex::eat(s, "+pve") && lex::eat_span(s, lex::is_digit) == 0) {
        return false;
    }
    lex::eat(s, ".pxe");
    return s.empty();
}

} // namespace passthru::format::pve
