// SPDX-License-Identifier: GPL-2.0-or-later
#include "format/pve_mapping.hpp"

#include "format/pve_config.hpp"
#include "util/lex.hpp"
#include "util/strings.hpp"

namespace passthru::format::pve {

namespace {

namespace lex = util::lex;

// pve-common SectionConfig.pm: property lines start with white space
// (^\s+(\S+)(\s+(.*\S))?\s*$), matched by hand in constant stack (util/lex.hpp).
bool match_property_line(std::string_view line, std::string& key, std::string& value)
{
    const std::size_t indent = lex::span(line, 0, lex::is_space);
    const std::size_t key_len = lex::span(line, indent, [](char c) { return !lex::is_space(c); });
    if (indent == 0 || key_len == 0) {
        return false;
    }
    const std::string_view rest = util::trim(line.substr(indent + key_len));
    if (rest.find('\r') != std::string_view::npos) {
        return false; // '.' does not match a line terminator
    }
    key = std::string(line.substr(indent, key_len));
    value = std::string(rest);
    return true;
}

// ^(\S+)\s*$
bool match_header_line(std::string_view line, std::string& id)
{
    const std::size_t n = lex::span(line, 0, [](char c) { return !lex::is_space(c); });
    if (n == 0 || !util::trim(line.substr(n)).empty()) {
        return false;
    }
    id = std::string(line.substr(0, n));
    return true;
}

// [a-f0-9]{4,}:[a-f0-9]{2}:[a-f0-9]{2}(\.[a-f0-9])?
bool valid_full_address(std::string_view a)
{
    const auto parts = util::split_exact(a, ':');
    return parts.size() == 3 && parts[0].size() >= 4 && valid_hostpci_id(a);
}

} // namespace

std::optional<MapEntry> MapEntry::parse(std::string_view value)
{
    MapEntry entry;
    const PropertyString ps = PropertyString::parse(value);
    for (const auto& [key, v] : ps.parts) {
        if (key == "node") {
            entry.node = v;
        } else if (key == "path") {
            entry.paths = util::split(v, ";");
        } else if (key == "id") {
            entry.id = v;
        } else if (key == "subsystem-id") {
            entry.subsystem_id = v;
        } else if (key == "iommugroup") {
            if (auto n = util::parse_int(v)) {
                entry.iommu_group = static_cast<int>(*n);
            }
        } else if (key == "description") {
            entry.description = v;
        }
    }
    if (entry.node.empty() || entry.paths.empty()) {
        return std::nullopt;
    }
    return entry;
}

std::string MapEntry::str() const
{
    // JSONSchema print_property_string: required keys sorted, then optional keys sorted.
    std::string out = "id=" + id + ",node=" + node + ",path=" + util::join(paths, ";");
    if (description) {
        out += ",description=" + *description;
    }
    if (iommu_group) {
        out += ",iommugroup=" + std::to_string(*iommu_group);
    }
    if (subsystem_id) {
        out += ",subsystem-id=" + *subsystem_id;
    }
    return out;
}

PciMappingFile PciMappingFile::parse(std::string_view text)
{
    PciMappingFile file;
    file.m_trailing_newline = text.empty() || text.back() == '\n';
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        file.m_lines.emplace_back(text.substr(pos, end - pos));
        pos = end + 1;
    }
    file.reindex();
    return file;
}

void PciMappingFile::reindex()
{
    m_sections.clear();
    MappingSection* current = nullptr;
    for (std::size_t i = 0; i < m_lines.size(); ++i) {
        const std::string& line = m_lines[i];
        if (util::trim(line).empty()) {
            current = nullptr; // a blank line ends a section
            continue;
        }
        if (line.front() == '#') {
            continue;
        }
        std::string key;
        std::string value;
        if (current != nullptr && match_property_line(line, key, value)) {
            current->last_line = i;
            if (key == "map") {
                if (auto entry = MapEntry::parse(value)) {
                    current->maps.push_back(std::move(*entry));
                }
            }
            continue;
        }
        if (std::string id; match_header_line(line, id)) {
            m_sections.push_back(MappingSection{std::move(id), {}, i, i});
            current = &m_sections.back();
        }
    }
}

std::string PciMappingFile::str() const
{
    std::string out = util::join(m_lines, "\n");
    if (!m_lines.empty() && m_trailing_newline) {
        out += '\n';
    }
    return out;
}

const MappingSection* PciMappingFile::find(std::string_view id) const
{
    for (const auto& s : m_sections) {
        if (s.id == id) {
            return &s;
        }
    }
    return nullptr;
}

void PciMappingFile::add_map(std::string_view id, const MapEntry& entry)
{
    const MappingSection* s = find(id);
    if (s == nullptr) {
        add_section(id, {entry}, std::nullopt);
        return;
    }
    const auto at = static_cast<std::ptrdiff_t>(s->last_line + 1);
    m_lines.insert(m_lines.begin() + at, "\tmap " + entry.str());
    if (static_cast<std::size_t>(at) == m_lines.size() - 1) {
        m_trailing_newline = true;
    }
    reindex();
}

void PciMappingFile::add_section(std::string_view id, const std::vector<MapEntry>& maps, const std::optional<std::string>& description)
{
    // A blank line must separate the new section from the previous one.
    if (!m_lines.empty() && !util::trim(m_lines.back()).empty()) {
        m_lines.emplace_back("");
    }
    m_lines.emplace_back(id);
    for (const auto& map : maps) {
        m_lines.push_back("\tmap " + map.str());
    }
    if (description) {
        m_lines.push_back("\tdescription " + *description);
    }
    m_lines.emplace_back(""); // PVE's writer ends every section with a blank line
    m_trailing_newline = true;
    reindex();
}

bool valid_config_id(std::string_view id)
{
    // [a-z][a-z0-9_-]+, case-insensitive
    return id.size() >= 2 && lex::is_alpha(id.front())
           && lex::all_of(id.substr(1), [](char c) { return lex::is_alnum(c) || c == '_' || c == '-'; });
}

bool valid_map_path(std::string_view path)
{
    // one or more full addresses separated by ';'
    for (const auto part : util::split_exact(path, ';')) {
        if (!valid_full_address(part)) {
            return false;
        }
    }
    return true;
}

std::optional<std::string> node_name_from_hostname(std::string_view hostname_file)
{
    std::string name(util::trim(hostname_file));
    name = name.substr(0, name.find('.'));
    if (name.empty() || name.find_first_of(" \t\n/") != std::string::npos) {
        return std::nullopt;
    }
    return name;
}

std::vector<PassedIds> passed_ids(const VmConfig& config, std::string_view section, const PciMappingFile* mappings,
                                  const std::optional<std::string>& node)
{
    std::vector<PassedIds> out;
    for (const auto& [key, value] : config.entries(section)) {
        if (!key.starts_with("hostpci") || key.size() == 7 || key.find_first_not_of("0123456789", 7) != std::string::npos) {
            continue;
        }
        const HostPci hp = HostPci::parse(value);
        PassedIds passed{key, value, hp.host_ids};
        const MappingSection* map = hp.mapping && mappings != nullptr ? mappings->find(*hp.mapping) : nullptr;
        if (map != nullptr) {
            for (const auto& entry : map->maps) {
                if (!node || entry.node == *node) {
                    passed.ids.insert(passed.ids.end(), entry.paths.begin(), entry.paths.end());
                }
            }
        }
        out.push_back(std::move(passed));
    }
    return out;
}

} // namespace passthru::format::pve
