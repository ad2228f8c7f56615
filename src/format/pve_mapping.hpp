// SPDX-License-Identifier: GPL-2.0-or-later
// The cluster PCI mapping file /etc/pve/mapping/pci.cfg (PVE >= 8.0), a
// SectionConfig whose header is the bare mapping id (FACTS.md §2). Existing
// text is kept byte for byte; new map lines and sections are added in the
// layout PVE's writer uses (tab-indented properties, a blank line after
// each section, required keys first in a map value).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace passthru::format::pve {

// One "map" value: node=...,path=...,id=... (FACTS.md §2).
struct MapEntry
{
    std::string node;
    std::vector<std::string> paths; // "0000:01:00" or "0000:01:00.0"; ';'-separated in the file
    std::string id;                 // vendor:device
    std::optional<std::string> subsystem_id;
    std::optional<int> iommu_group;
    std::optional<std::string> description;

    static std::optional<MapEntry> parse(std::string_view value);
    // required keys (id, node, path) then optional keys, each group sorted.
    std::string str() const;
};

struct MappingSection
{
    std::string id;
    std::vector<MapEntry> maps;
    std::size_t header_line = 0; // index into the file's lines
    std::size_t last_line = 0;   // last property line (the header when none)
};

class PciMappingFile
{
public:
    static PciMappingFile parse(std::string_view text);
    std::string str() const;

    const std::vector<MappingSection>& sections() const noexcept { return m_sections; }
    const MappingSection* find(std::string_view id) const;
    // Appends a map line to an existing section (after its last property).
    void add_map(std::string_view id, const MapEntry& entry);
    // Appends a new section at the end of the file.
    void add_section(std::string_view id, const std::vector<MapEntry>& maps, const std::optional<std::string>& description);

private:
    void reindex();
    std::vector<std::string> m_lines;
    bool m_trailing_newline = true;
    std::vector<MappingSection> m_sections;
};

// pve-configid: ^[a-z][a-z0-9_-]+$ (case-insensitive), at least 2 characters.
bool valid_config_id(std::string_view id);
// The map path pattern: domain mandatory, lowercase, function optional.
bool valid_map_path(std::string_view path);

} // namespace passthru::format::pve
