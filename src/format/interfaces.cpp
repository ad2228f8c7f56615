// SPDX-License-Identifier: GPL-2.0-or-later
#include "format/interfaces.hpp"

#include <algorithm>

namespace passthru::format {

namespace {

bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

std::vector<std::string> split_words(std::string_view s)
{
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && is_space(s[i])) {
            ++i;
        }
        const std::size_t start = i;
        while (i < s.size() && !is_space(s[i])) {
            ++i;
        }
        if (i > start) {
            out.emplace_back(s.substr(start, i - start));
        }
    }
    return out;
}

// The content of a physical line without its line ending.
std::string_view content_of(std::string_view physical)
{
    if (!physical.empty() && physical.back() == '\n') {
        physical.remove_suffix(1);
    }
    if (!physical.empty() && physical.back() == '\r') {
        physical.remove_suffix(1);
    }
    return physical;
}

// Splits text into logical lines (raw + words), kinds not yet assigned.
std::vector<IfLine> split_logical(std::string_view text, std::size_t first_line_number)
{
    std::vector<IfLine> out;
    std::size_t pos = 0;
    std::size_t number = first_line_number;
    while (pos < text.size()) {
        IfLine line;
        line.line_number = number;
        std::string joined;
        for (;;) {
            const std::size_t nl = text.find('\n', pos);
            const std::size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
            const std::string_view physical = text.substr(pos, end - pos);
            line.raw.append(physical);
            pos = end;
            if (number != 0) {
                ++number;
            }
            std::string_view content = content_of(physical);
            const bool continues = !content.empty() && content.back() == '\\' && pos < text.size();
            if (continues) {
                content.remove_suffix(1);
            }
            joined.append(content);
            if (!continues) {
                break;
            }
            joined.push_back(' ');
        }
        line.words = split_words(joined);
        out.push_back(std::move(line));
    }
    return out;
}

bool is_stanza_header(IfLineKind kind)
{
    return kind == IfLineKind::iface || kind == IfLineKind::mapping || kind == IfLineKind::vlan;
}

} // namespace

bool is_interfaces_keyword(std::string_view word)
{
    return word == "iface" || word == "auto" || word == "mapping" || word == "source" || word == "source-directory"
           || word == "no-auto-down" || word == "no-scripts" || word == "rename" || word == "vlan" || word.substr(0, 6) == "allow-";
}

std::string IfLine::value() const
{
    std::string out;
    for (std::size_t i = 1; i < words.size(); ++i) {
        if (i > 1) {
            out.push_back(' ');
        }
        out += words[i];
    }
    return out;
}

InterfacesFile InterfacesFile::parse(std::string_view text)
{
    InterfacesFile file;
    file.m_lines = split_logical(text, 1);
    const std::size_t nl = text.find('\n');
    if (nl != std::string_view::npos && nl > 0 && text[nl - 1] == '\r') {
        file.m_eol = "\r\n";
    }
    file.classify();
    return file;
}

void InterfacesFile::classify()
{
    bool in_stanza = false;
    for (auto& line : m_lines) {
        if (line.words.empty()) {
            line.kind = IfLineKind::blank;
            continue;
        }
        const std::string& first = line.words[0];
        if (first[0] == '#') {
            line.kind = IfLineKind::comment;
            continue;
        }
        if (!is_interfaces_keyword(first)) {
            line.kind = in_stanza ? IfLineKind::option : IfLineKind::stray;
            continue;
        }
        if (first == "iface") {
            line.kind = IfLineKind::iface;
        } else if (first == "auto") {
            line.kind = IfLineKind::auto_;
        } else if (first == "mapping") {
            line.kind = IfLineKind::mapping;
        } else if (first == "vlan") {
            line.kind = IfLineKind::vlan;
        } else if (first == "source") {
            line.kind = IfLineKind::source;
        } else if (first == "source-directory") {
            line.kind = IfLineKind::source_directory;
        } else if (first == "no-auto-down") {
            line.kind = IfLineKind::no_auto_down;
        } else if (first == "no-scripts") {
            line.kind = IfLineKind::no_scripts;
        } else if (first == "rename") {
            line.kind = IfLineKind::rename;
        } else {
            line.kind = IfLineKind::allow;
        }
        in_stanza = is_stanza_header(line.kind);
    }
}

std::string InterfacesFile::text() const
{
    std::string out;
    for (const auto& line : m_lines) {
        out += line.raw;
    }
    return out;
}

std::vector<std::size_t> InterfacesFile::stray_lines() const
{
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < m_lines.size(); ++i) {
        if (m_lines[i].kind == IfLineKind::stray) {
            out.push_back(i);
        }
    }
    return out;
}

std::vector<IfaceStanza> InterfacesFile::stanzas() const
{
    std::vector<IfaceStanza> out;
    for (std::size_t i = 0; i < m_lines.size(); ++i) {
        if (m_lines[i].kind != IfLineKind::iface || m_lines[i].words.size() < 2) {
            continue;
        }
        IfaceStanza stanza;
        stanza.header = i;
        stanza.name = m_lines[i].words[1];
        if (m_lines[i].words.size() > 2) {
            stanza.family = m_lines[i].words[2];
        }
        if (m_lines[i].words.size() > 3) {
            stanza.method = m_lines[i].words[3];
        }
        stanza.end = i + 1;
        for (std::size_t j = i + 1; j < m_lines.size(); ++j) {
            const IfLineKind kind = m_lines[j].kind;
            if (kind == IfLineKind::option) {
                stanza.options.push_back(j);
                stanza.end = j + 1;
            } else if (kind != IfLineKind::blank && kind != IfLineKind::comment) {
                break;
            }
        }
        out.push_back(std::move(stanza));
    }
    return out;
}

std::vector<IfaceStanza> InterfacesFile::find(std::string_view name) const
{
    std::vector<IfaceStanza> out;
    for (auto& stanza : stanzas()) {
        if (stanza.name == name) {
            out.push_back(std::move(stanza));
        }
    }
    return out;
}

std::optional<IfaceStanza> InterfacesFile::find(std::string_view name, std::string_view family) const
{
    for (auto& stanza : stanzas()) {
        if (stanza.name == name && stanza.family == family) {
            return stanza;
        }
    }
    return std::nullopt;
}

std::optional<std::size_t> InterfacesFile::find_option(const IfaceStanza& stanza, std::string_view key) const
{
    for (const std::size_t index : stanza.options) {
        if (m_lines[index].keyword() == key) {
            return index;
        }
    }
    return std::nullopt;
}

std::optional<std::string> InterfacesFile::option(const IfaceStanza& stanza, std::string_view key) const
{
    if (auto index = find_option(stanza, key)) {
        return m_lines[*index].value();
    }
    return std::nullopt;
}

bool InterfacesFile::is_auto(std::string_view name) const
{
    for (const auto& line : m_lines) {
        if (line.kind == IfLineKind::auto_ || (line.kind == IfLineKind::allow && line.words[0] == "allow-auto")) {
            if (std::find(line.words.begin() + 1, line.words.end(), name) != line.words.end()) {
                return true;
            }
        }
    }
    return false;
}

std::vector<std::string> InterfacesFile::sources() const
{
    std::vector<std::string> out;
    for (const auto& line : m_lines) {
        if ((line.kind == IfLineKind::source || line.kind == IfLineKind::source_directory) && line.words.size() > 1) {
            out.push_back(line.words[1]);
        }
    }
    return out;
}

std::string InterfacesFile::option_indent() const
{
    for (const auto& line : m_lines) {
        if (line.kind == IfLineKind::option) {
            const std::size_t n = line.raw.find_first_not_of(" \t");
            if (n != std::string::npos && n > 0) {
                return line.raw.substr(0, n);
            }
        }
    }
    return "\t";
}

bool InterfacesFile::set_option(std::string_view name, std::string_view family, std::string_view key, std::string_view value,
                                OptionPlace place)
{
    auto stanza = find(name, family);
    if (!stanza) {
        return false;
    }
    std::vector<std::string> words{std::string(key)};
    for (auto& w : split_words(value)) {
        words.push_back(std::move(w));
    }
    std::vector<std::size_t> matches;
    for (const std::size_t index : stanza->options) {
        if (m_lines[index].keyword() == key) {
            matches.push_back(index);
        }
    }
    bool changed = false;
    // Later duplicates go first so the earlier indices stay valid.
    for (std::size_t i = matches.size(); i > 1; --i) {
        remove_line(matches[i - 1]);
        changed = true;
    }
    if (!matches.empty()) {
        if (m_lines[matches[0]].words != words) {
            rewrite_line(matches[0], words);
            changed = true;
        }
        return changed;
    }
    const std::size_t pos = (stanza->options.empty() || place == OptionPlace::first) ? stanza->header + 1 : stanza->options.back() + 1;
    std::string text = option_indent() + join_words(words) + m_eol;
    insert_text(pos, text);
    return true;
}

bool InterfacesFile::remove_option(std::string_view name, std::string_view family, std::string_view key)
{
    auto stanza = find(name, family);
    if (!stanza) {
        return false;
    }
    bool removed = false;
    for (auto it = stanza->options.rbegin(); it != stanza->options.rend(); ++it) {
        if (m_lines[*it].keyword() == key) {
            remove_line(*it);
            removed = true;
        }
    }
    return removed;
}

bool InterfacesFile::set_method(std::string_view name, std::string_view family, std::string_view method)
{
    auto stanza = find(name, family);
    if (!stanza || stanza->method == method) {
        return false;
    }
    std::vector<std::string> words = m_lines[stanza->header].words;
    words.resize(std::max<std::size_t>(words.size(), 4));
    if (words[2].empty()) {
        words[2] = "inet";
    }
    words[3] = std::string(method);
    rewrite_line(stanza->header, words);
    return true;
}

std::size_t InterfacesFile::insert_text(std::size_t pos, std::string_view text)
{
    pos = std::min(pos, m_lines.size());
    // A last line without a newline must get one before anything follows it.
    if (pos == m_lines.size() && !m_lines.empty() && !m_lines.back().raw.empty() && m_lines.back().raw.back() != '\n') {
        m_lines.back().raw += m_eol;
    }
    auto added = split_logical(text, 0);
    m_lines.insert(m_lines.begin() + static_cast<std::ptrdiff_t>(pos), added.begin(), added.end());
    classify();
    return pos;
}

void InterfacesFile::remove_line(std::size_t index)
{
    if (index < m_lines.size()) {
        m_lines.erase(m_lines.begin() + static_cast<std::ptrdiff_t>(index));
        classify();
    }
}

void InterfacesFile::rewrite_line(std::size_t index, const std::vector<std::string>& words)
{
    IfLine& line = m_lines.at(index);
    const std::size_t n = line.raw.find_first_not_of(" \t");
    const std::string indent = line.raw.substr(0, n == std::string::npos ? 0 : n);
    const bool had_eol = !line.raw.empty() && line.raw.back() == '\n';
    line.raw = indent + join_words(words) + (had_eol ? m_eol : std::string());
    line.words = words;
    line.line_number = 0;
    classify();
}

bool InterfacesFile::remove_auto(std::string_view name)
{
    bool changed = false;
    for (std::size_t i = m_lines.size(); i > 0; --i) {
        const IfLine& line = m_lines[i - 1];
        if (line.kind != IfLineKind::auto_) {
            continue;
        }
        std::vector<std::string> words;
        for (const auto& w : line.words) {
            if (w != name) {
                words.push_back(w);
            }
        }
        if (words.size() == line.words.size()) {
            continue;
        }
        changed = true;
        if (words.size() <= 1) {
            remove_line(i - 1);
        } else {
            rewrite_line(i - 1, words);
        }
    }
    return changed;
}

std::string join_words(const std::vector<std::string>& words)
{
    std::string out;
    for (const auto& w : words) {
        if (!out.empty()) {
            out.push_back(' ');
        }
        out += w;
    }
    return out;
}

} // namespace passthru::format
