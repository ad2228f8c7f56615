// SPDX-License-Identifier: GPL-2.0-or-later
// The cluster PCI mapping file /etc/pve/mapping/pci.cfg: parsing never fails
// and the text comes back byte for byte; every map value goes through
// MapEntry::parse, whose result prints as a value that parses to the same.
#include "format/pve_mapping.hpp"
#include "fuzz.hpp"

using namespace passthru;
using format::pve::MapEntry;
using format::pve::PciMappingFile;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto text = fuzz::text_of(data, size);
    const auto file = PciMappingFile::parse(text);
    fuzz::require(file.str() == text, "PciMappingFile::parse(text).str() == text");
    if (const auto entry = MapEntry::parse(text)) {
        const auto again = MapEntry::parse(entry->str());
        fuzz::require(again.has_value() && again->str() == entry->str(), "MapEntry prints as a value that parses to the same");
    }
    (void)format::pve::valid_config_id(text);
    (void)format::pve::valid_map_path(text);
    (void)format::pve::node_name_from_hostname(text);
    return 0;
}
