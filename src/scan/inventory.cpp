// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/inventory.hpp"

#include <algorithm>

#include "util/strings.hpp"

namespace passthru::scan {

std::string PciDevice::vendor_device() const
{
    if (!vendor || !device) {
        return {};
    }
    return util::hex(*vendor, 4) + ":" + util::hex(*device, 4);
}

bool HostInfo::module_loaded(std::string_view name) const
{
    return std::find(loaded_modules.begin(), loaded_modules.end(), util::module_key(name)) != loaded_modules.end();
}

const PciDevice* Inventory::find(const PciAddress& addr) const
{
    const auto it =
        std::lower_bound(devices.begin(), devices.end(), addr, [](const PciDevice& d, const PciAddress& a) { return d.address < a; });
    return (it != devices.end() && it->address == addr) ? &*it : nullptr;
}

const PciDevice* Inventory::first_function(const GpuCard& card) const
{
    return card.functions.empty() ? nullptr : find(card.functions.front());
}

const GpuCard* Inventory::find_gpu(std::string_view slot) const
{
    const auto parsed = parse_slot(slot);
    if (!parsed) {
        return nullptr;
    }
    const std::string wanted = parsed->slot();
    for (const auto& gpu : gpus) {
        if (gpu.slot == wanted) {
            return &gpu;
        }
    }
    return nullptr;
}

const GpuCard* Inventory::gpu_of(const PciAddress& addr) const
{
    for (const auto& gpu : gpus) {
        if (std::find(gpu.functions.begin(), gpu.functions.end(), addr) != gpu.functions.end()) {
            return &gpu;
        }
    }
    return nullptr;
}

const GpuCard* Inventory::nvswitch_of(const PciAddress& addr) const
{
    for (const auto& sw : nvswitches) {
        if (std::find(sw.functions.begin(), sw.functions.end(), addr) != sw.functions.end()) {
            return &sw;
        }
    }
    return nullptr;
}

std::map<std::string, PciAddress> Inventory::net_interfaces() const
{
    std::map<std::string, PciAddress> out;
    for (const auto& dev : devices) {
        for (const auto& name : dev.net_interfaces) {
            out.emplace(name, dev.address);
        }
    }
    return out;
}

std::string_view to_string(Isolation isolation)
{
    switch (isolation) {
    case Isolation::clean:
        return "clean";
    case Isolation::shared_with_gpu:
        return "shared-with-gpu";
    case Isolation::shared:
        return "shared";
    case Isolation::unknown:
        return "unknown";
    }
    return "unknown";
}

std::string_view to_string(Bootloader bootloader)
{
    return boot_loader(bootloader).name;
}

std::string_view to_string(Severity severity)
{
    switch (severity) {
    case Severity::error:
        return "error";
    case Severity::warning:
        return "warning";
    case Severity::info:
        return "info";
    }
    return "info";
}

std::string_view to_string(GuestKind kind)
{
    return kind == GuestKind::vm ? "VM" : "container";
}

} // namespace passthru::scan
