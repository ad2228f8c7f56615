// SPDX-License-Identifier: GPL-2.0-or-later
// The cluster PCI mapping file /etc/pve/mapping/pci.cfg (PVE >= 8.0), a
// SectionConfig whose header is the bare mapping id (docs/facts.md: pci-mapping). Existing
// text is kept byte for byte; new map lines and sections are added in the
// layout PVE's writer uses (tab-indented properties, a blank line after
// each section, required keys first in a map value).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/pve_config.hpp"

namespace passthru::format::pve {

// One "map" value: node=...,path=...,id=... (docs/facts.md: pci-mapping).
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

// This node's name as Proxmox VE sees it, from the text of /etc/hostname: the
// host name up to the first dot (docs/facts.md: pci-mapping). nullopt when the
// text holds no usable name.
std::optional<std::string> node_name_from_hostname(std::string_view hostname_file);

// The one answer to "which PCI functions does this VM config pass": the ids
// of its hostpciN entries in `section` ("" for the current config,
// "PENDING"), raw ids as written and, for mapping=ID entries, the paths of
// that mapping's map lines for `node` — every node's lines when the node is
// unknown, so that a doubt counts as "passed" (fail closed). Used by plan
// (a card given to another VM) and verify (the VM carries the cards).
struct PassedIds
{
    std::string key;              // "hostpci0"
    std::string value;            // the entry as written
    std::vector<std::string> ids; // hostpci ids or mapping paths
};
std::vector<PassedIds> passed_ids(const VmConfig& config, std::string_view section, const PciMappingFile* mappings,
                                  const std::optional<std::string>& node);

} // namespace passthru::format::pve
