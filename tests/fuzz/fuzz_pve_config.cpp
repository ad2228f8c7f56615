// SPDX-License-Identifier: GPL-2.0-or-later
// A Proxmox VE VM config (/etc/pve/qemu-server/<vmid>.conf, any PVE user with
// VM.Config rights writes parts of it): parsing never fails, the text comes
// back byte for byte, and every value goes through the property-string and
// hostpci parsers; an edit keeps the file parseable with the edit in it.
#include "format/pve_config.hpp"
#include "fuzz.hpp"

using namespace passthru;
using format::pve::VmConfig;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto text = fuzz::text_of(data, size);
    auto config = VmConfig::parse(text);
    fuzz::require(config.str() == text, "VmConfig::parse(text).str() == text");
    auto sections = config.section_names();
    sections.emplace_back(); // the current config
    for (const auto& section : sections) {
        for (const auto& [key, value] : config.entries(section)) {
            (void)format::pve::PropertyString::parse(value).str();
            if (key.starts_with("hostpci")) {
                (void)format::pve::HostPci::parse(value);
                (void)format::pve::valid_hostpci_id(value);
            }
            (void)format::pve::valid_key(key);
        }
    }
    (void)config.pending_keys();
    for (const auto& [key, value] : config.entries()) {
        (void)format::pve::parse_boolean(value);
        (void)key;
    }
    config.set("hostpci0", "0000:01:00,pcie=1");
    const auto again = VmConfig::parse(config.str());
    fuzz::require(again.get("hostpci0") == "0000:01:00,pcie=1", "a set key reads back after a reparse");
    return 0;
}
