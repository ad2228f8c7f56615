// SPDX-License-Identifier: GPL-2.0-or-later
// A Proxmox VE container config (/etc/pve/lxc/<vmid>.conf, any PVE user with
// VM.Config rights writes parts of it): parsing never fails, the text comes
// back byte for byte, and every value goes through the devN:, mount-entry and
// cgroup2 device-rule parsers.
#include "format/lxc_config.hpp"
#include "fuzz.hpp"

using namespace passthru;
using format::lxc::CtConfig;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto text = fuzz::text_of(data, size);
    const auto config = CtConfig::parse(text);
    fuzz::require(config.str() == text, "CtConfig::parse(text).str() == text");
    for (const auto& line : config.lines()) {
        (void)format::lxc::dev_index(line.key);
        if (const auto dev = format::lxc::DevEntry::parse(line.value)) {
            fuzz::require(dev->path.starts_with("/dev/"), "a devN path starts with /dev/");
        }
        (void)format::lxc::mount_entry_source(line.value);
        if (const auto rule = format::lxc::DeviceRule::parse(line.value)) {
            (void)rule->covers_char(195, 0);
        }
    }
    (void)config.unprivileged();
    return 0;
}
