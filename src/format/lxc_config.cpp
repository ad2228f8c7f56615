// SPDX-License-Identifier: GPL-2.0-or-later
#include "format/lxc_config.hpp"

#include <limits>

#include "format/pve_config.hpp"
#include "util/lex.hpp"
#include "util/strings.hpp"

namespace passthru::format::lxc {

namespace {

namespace lex = util::lex;

// pve-container PVE::LXC::Config parse_pct_config, matched by hand in constant
// stack (util/lex.hpp); docs/facts.md: lxc-config.

bool is_snapshot_char(char c)
{
    return lex::is_alnum(c) || c == '_' || c == '-';
}

// ^\[pve:pending\]\s*$ (case-insensitive) or ^\[([a-z][a-z0-9_\-]+)\]\s*$ (case-insensitive).
bool match_ct_section(std::string_view text, std::string& name)
{
    if (!text.starts_with('[')) {
        return false;
    }
    const auto close = text.find(']', 1);
    if (close == std::string_view::npos || !util::trim(text.substr(close + 1)).empty()) {
        return false;
    }
    const std::string_view inner = text.substr(1, close - 1);
    if (util::to_lower(inner) == k_pending_section) {
        name = std::string(k_pending_section);
        return true;
    }
    if (inner.size() < 2 || !lex::is_alpha(inner.front()) || lex::span(inner, 1, is_snapshot_char) != inner.size() - 1) {
        return false;
    }
    name = std::string(inner);
    return true;
}

// The value part of a key line: \s*(.*?)\s*$ ('.' excludes '\r' as in Perl without /s it
// excludes only '\n'; a '\r' inside the value makes the line unmatched).
std::optional<std::string> key_value_text(std::string_view rest)
{
    const std::string_view v = util::trim(rest);
    if (v.find('\r') != std::string_view::npos) {
        return std::nullopt;
    }
    return std::string(v);
}

// ^(lxc\.[a-z0-9_\-\.]+)(:|\s*=)\s*(.*?)\s*$
bool match_raw_lxc(std::string_view text, std::string& key, std::string& value)
{
    if (!text.starts_with("lxc.")) {
        return false;
    }
    const std::size_t n =
        4 + lex::span(text, 4, [](char c) { return lex::is_lower(c) || lex::is_digit(c) || c == '_' || c == '-' || c == '.'; });
    if (n == 4) {
        return false;
    }
    std::string_view rest = text.substr(n);
    if (!lex::eat(rest, ":")) {
        lex::eat_span(rest, lex::is_space);
        if (!lex::eat(rest, "=")) {
            return false;
        }
    }
    auto v = key_value_text(rest);
    if (!v) {
        return false;
    }
    key = std::string(text.substr(0, n));
    value = std::move(*v);
    return true;
}

// ^([a-z][a-z_]*\d*):\s*(.+?)\s*$
bool match_pve_key(std::string_view text, std::string& key, std::string& value)
{
    if (text.empty() || !lex::is_lower(text.front())) {
        return false;
    }
    std::size_t n = 1 + lex::span(text, 1, [](char c) { return lex::is_lower(c) || c == '_'; });
    n += lex::span(text, n, lex::is_digit);
    if (n >= text.size() || text[n] != ':') {
        return false;
    }
    auto v = key_value_text(text.substr(n + 1));
    if (!v || v->empty()) {
        return false;
    }
    key = std::string(text.substr(0, n));
    value = std::move(*v);
    return true;
}

CtLine classify(std::string text, std::size_t number, const std::string& section)
{
    CtLine line;
    line.text = std::move(text);
    line.number = number;
    line.section = section;
    if (util::trim(line.text).empty()) {
        line.kind = LineKind::blank;
    } else if (line.text.front() == '#') {
        line.kind = LineKind::comment;
    } else if (match_ct_section(line.text, line.key)) {
        line.kind = LineKind::section;
        line.section = line.key;
    } else if (match_raw_lxc(line.text, line.key, line.value)) {
        line.kind = LineKind::raw_lxc;
    } else if (match_pve_key(line.text, line.key, line.value)) {
        line.kind = LineKind::key_value;
    }
    return line;
}

std::optional<std::uint32_t> parse_u32(std::string_view text)
{
    if (!lex::all_of(text, lex::is_digit) || text.size() > 10) {
        return std::nullopt;
    }
    const auto v = util::parse_int(text);
    if (!v || *v > std::numeric_limits<std::uint32_t>::max()) {
        return std::nullopt;
    }
    return static_cast<std::uint32_t>(*v);
}

// pve-lxc-dev-string: starts with /dev/, no "/." or "/.." component.
bool valid_dev_path(std::string_view path)
{
    if (!path.starts_with("/dev/")) {
        return false;
    }
    for (std::size_t at = path.find("/."); at != std::string_view::npos; at = path.find("/.", at + 1)) {
        std::string_view tail = path.substr(at + 2);
        lex::eat(tail, ".");
        if (tail.empty() || tail.front() == '/') {
            return false;
        }
    }
    return true;
}

} // namespace

CtConfig CtConfig::parse(std::string_view text)
{
    CtConfig config;
    config.m_trailing_newline = text.empty() || text.back() == '\n';
    std::string section;
    std::size_t number = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const auto nl = text.find('\n', pos);
        const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
        CtLine line = classify(std::string(text.substr(pos, end - pos)), ++number, section);
        section = line.section;
        config.m_lines.push_back(std::move(line));
        pos = end + 1;
    }
    return config;
}

std::string CtConfig::str() const
{
    std::string out;
    for (std::size_t i = 0; i < m_lines.size(); ++i) {
        out += m_lines[i].text;
        if (i + 1 < m_lines.size() || m_trailing_newline) {
            out += '\n';
        }
    }
    return out;
}

std::optional<std::string> CtConfig::get(std::string_view key, std::string_view section) const
{
    std::optional<std::string> found;
    for (const auto& line : m_lines) {
        if (line.kind == LineKind::key_value && line.section == section && line.key == key) {
            found = line.value; // the last one wins, as in PVE's hash
        }
    }
    return found;
}

std::string CtConfig::with_inserted(std::size_t at, const std::vector<std::string>& new_lines) const
{
    std::vector<std::string_view> texts;
    texts.reserve(m_lines.size() + new_lines.size());
    for (std::size_t i = 0; i <= m_lines.size(); ++i) {
        if (i == at) {
            texts.insert(texts.end(), new_lines.begin(), new_lines.end());
        }
        if (i < m_lines.size()) {
            texts.emplace_back(m_lines[i].text);
        }
    }
    // A file without its last line feed keeps that, unless the new lines come last.
    const bool trailing = m_trailing_newline || (at >= m_lines.size() && !new_lines.empty());
    std::string out;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        out += texts[i];
        if (i + 1 < texts.size() || trailing) {
            out += '\n';
        }
    }
    return out;
}

std::size_t CtConfig::dev_insert_point() const
{
    std::optional<std::size_t> after_dev;
    std::optional<std::size_t> before_key;
    std::size_t after_last = 0;
    for (std::size_t i = 0; i < m_lines.size(); ++i) {
        const auto& line = m_lines[i];
        if (line.kind == LineKind::section) {
            break;
        }
        if (line.kind == LineKind::key_value && dev_index(line.key)) {
            after_dev = i + 1;
        } else if (line.kind == LineKind::key_value && !before_key && line.key > "dev") {
            before_key = i;
        }
        if (line.kind != LineKind::blank) {
            after_last = i + 1;
        }
    }
    return after_dev ? *after_dev : before_key ? *before_key : after_last;
}

bool CtConfig::unprivileged() const
{
    const auto value = get("unprivileged");
    return value && pve::parse_boolean(*value).value_or(false);
}

std::optional<int> dev_index(std::string_view key)
{
    std::string_view digits = key;
    if (!lex::eat(digits, "dev") || !lex::all_of(digits, lex::is_digit) || digits.size() > 3
        || (digits.size() > 1 && digits.front() == '0')) {
        return std::nullopt;
    }
    const auto n = util::parse_int(digits);
    if (!n || *n > 255) {
        return std::nullopt;
    }
    return static_cast<int>(*n);
}

std::optional<DevEntry> DevEntry::parse(std::string_view value)
{
    DevEntry entry;
    bool have_path = false;
    for (const auto part : util::split_exact(value, ',')) {
        const auto eq = part.find('=');
        const std::string_view key = eq == std::string_view::npos ? std::string_view("path") : part.substr(0, eq);
        const std::string_view val = eq == std::string_view::npos ? part : part.substr(eq + 1);
        if (key == "path") {
            if (have_path || !valid_dev_path(val)) {
                return std::nullopt;
            }
            entry.path = std::string(val);
            have_path = true;
        } else if (key == "mode") {
            if (val.size() != 4 || val.front() != '0' || lex::span(val, 1, [](char c) { return c >= '0' && c <= '7'; }) != 3) {
                return std::nullopt;
            }
            entry.mode = std::string(val);
        } else if (key == "uid" || key == "gid") {
            const auto id = parse_u32(val);
            if (!id) {
                return std::nullopt;
            }
            (key == "uid" ? entry.uid : entry.gid) = id;
        } else if (key == "deny-write") {
            const auto b = pve::parse_boolean(val);
            if (!b) {
                return std::nullopt;
            }
            entry.deny_write = *b;
        } else {
            return std::nullopt;
        }
    }
    if (!have_path) {
        return std::nullopt; // "Path has to be defined"
    }
    return entry;
}

std::optional<std::string> mount_entry_source(std::string_view value)
{
    const auto fields = util::split(value, " \t");
    if (fields.empty()) {
        return std::nullopt;
    }
    return fields.front();
}

std::optional<DeviceRule> DeviceRule::parse(std::string_view value)
{
    const auto fields = util::split(value, " \t");
    if (fields.empty() || fields.front().size() != 1) {
        return std::nullopt;
    }
    DeviceRule rule;
    rule.type = fields.front().front();
    if (rule.type == 'a') {
        return fields.size() == 1 ? std::optional<DeviceRule>(rule) : std::nullopt;
    }
    if ((rule.type != 'c' && rule.type != 'b') || fields.size() != 3) {
        return std::nullopt;
    }
    const std::string& numbers = fields[1];
    const auto colon = numbers.find(':');
    if (colon == std::string::npos) {
        return std::nullopt;
    }
    const std::string_view maj = std::string_view(numbers).substr(0, colon);
    const std::string_view min = std::string_view(numbers).substr(colon + 1);
    if (maj != "*") {
        rule.major = parse_u32(maj);
        if (!rule.major) {
            return std::nullopt;
        }
    }
    if (min != "*") {
        rule.minor = parse_u32(min);
        if (!rule.minor) {
            return std::nullopt;
        }
    }
    if (!lex::all_of(fields[2], [](char c) { return c == 'r' || c == 'w' || c == 'm'; })) {
        return std::nullopt;
    }
    rule.access = fields[2];
    return rule;
}

bool DeviceRule::covers_char(std::uint32_t dev_major, std::uint32_t dev_minor) const
{
    if (type == 'a') {
        return true;
    }
    return type == 'c' && (!major || *major == dev_major) && (!minor || *minor == dev_minor);
}

} // namespace passthru::format::lxc
