// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/scan_json.hpp"

#include "util/strings.hpp"

namespace passthru::cli {

namespace {

using nlohmann::json;

template<typename T>
json opt(const std::optional<T>& value)
{
    return value ? json(*value) : json(nullptr);
}

json hex_opt(const std::optional<std::uint16_t>& value)
{
    return value ? json(util::hex(*value, 4)) : json(nullptr);
}

json addresses(const std::vector<scan::PciAddress>& addrs)
{
    json out = json::array();
    for (const auto& a : addrs) {
        out.push_back(a.str());
    }
    return out;
}

json host_json(const scan::Inventory& inv)
{
    const auto& host = inv.host;
    json jhost;
    jhost["cpu_vendor"] = host.cpu_vendor.empty() ? json(nullptr) : json(host.cpu_vendor);
    jhost["cpu_model"] = host.cpu_model.empty() ? json(nullptr) : json(host.cpu_model);
    jhost["cpu_count"] = host.cpu_count;
    jhost["virtualization"] = opt(host.virtualization);
    jhost["kernel"] = opt(host.kernel);
    jhost["cmdline"] = opt(host.cmdline);
    jhost["bootloader"] = std::string(scan::to_string(host.bootloader));
    jhost["bootloader_evidence"] = host.bootloader_evidence;
    jhost["trial_boot"] = host.cmdline && scan::is_trial_boot(*host.cmdline);
    jhost["uefi"] = host.uefi;
    jhost["proxmox_boot_tool"] = host.proxmox_boot_tool;
    jhost["pve_version"] = opt(host.pve_version);
    jhost["qemu_server_version"] = opt(host.qemu_server_version);
    jhost["mem_total_kib"] = opt(host.mem_total_kib);
    jhost["vgpu"] = {{"host", host.vgpu_host()}, {"evidence", host.vgpu_evidence}};
    jhost["iommu"] = {
        {"enabled", host.iommu.enabled},
        {"groups", host.iommu.groups},
        {"interrupt_remapping", opt(host.iommu.interrupt_remapping)},
        {"interrupt_remapping_evidence", host.iommu.interrupt_remapping_evidence},
        {"units", host.iommu.units},
    };
    jhost["modules"] = {
        {"vfio_pci", host.module_loaded("vfio_pci")},
        {"vfio", host.module_loaded("vfio")},
        {"nvidia", host.module_loaded("nvidia")},
        {"nouveau", host.module_loaded("nouveau")},
    };
    return jhost;
}

json device_json(const scan::PciDevice& d)
{
    json jd;
    jd["address"] = d.address.str();
    jd["vendor"] = hex_opt(d.vendor);
    jd["device"] = hex_opt(d.device);
    jd["class"] = d.class16() ? json(util::hex(*d.class16(), 4)) : json(nullptr);
    jd["class_code"] = d.class_code ? json(util::hex(*d.class_code, 6)) : json(nullptr);
    jd["subsystem"] = (d.subsystem_vendor && d.subsystem_device)
                          ? json(util::hex(*d.subsystem_vendor, 4) + ":" + util::hex(*d.subsystem_device, 4))
                          : json(nullptr);
    jd["revision"] = d.revision ? json(util::hex(*d.revision, 2)) : json(nullptr);
    jd["vendor_name"] = d.vendor_name.empty() ? json(nullptr) : json(d.vendor_name);
    jd["device_name"] = d.device_name.empty() ? json(nullptr) : json(d.device_name);
    jd["class_name"] = d.class_name.empty() ? json(nullptr) : json(d.class_name);
    jd["driver"] = opt(d.driver);
    jd["driver_override"] = opt(d.driver_override);
    jd["iommu_group"] = opt(d.iommu_group);
    jd["numa_node"] = opt(d.numa_node);
    jd["boot_vga"] = d.boot_vga;
    if (d.link) {
        jd["link"] = {{"speed", opt(d.link->speed)},
                      {"width", opt(d.link->width)},
                      {"max_speed", opt(d.link->max_speed)},
                      {"max_width", opt(d.link->max_width)}};
    } else {
        jd["link"] = nullptr;
    }
    jd["reset_method"] = d.reset_methods;
    jd["parent"] = d.parent ? json(d.parent->str()) : json(nullptr);
    jd["bridge"] = d.is_bridge;
    jd["acs"] = d.has_acs;
    jd["sriov"] = {{"virtfn", d.is_virtfn},
                   {"physfn", d.physfn ? json(d.physfn->str()) : json(nullptr)},
                   {"totalvfs", opt(d.sriov_totalvfs)},
                   {"numvfs", opt(d.sriov_numvfs)}};
    jd["net"] = d.net_interfaces;
    json links = json::array();
    for (const auto& l : d.net_links) {
        links.push_back({{"name", l.name}, {"mac", l.mac}, {"perm_mac", l.perm_mac}, {"ifindex", opt(l.ifindex)}});
    }
    jd["net_links"] = std::move(links);
    return jd;
}

json groups_json(const scan::Inventory& inv)
{
    json groups = json::array();
    for (const auto& [number, group] : inv.groups) {
        groups.push_back({{"group", number}, {"type", opt(group.type)}, {"devices", addresses(group.devices)}});
    }
    return groups;
}

json gpus_json(const scan::Inventory& inv)
{
    json gpus = json::array();
    int index = 0;
    for (const auto& g : inv.gpus) {
        json jg;
        jg["index"] = index++;
        jg["slot"] = g.slot;
        jg["vendor"] = util::hex(g.vendor, 4);
        jg["nvidia"] = g.is_nvidia();
        jg["functions"] = addresses(g.functions);
        jg["iommu_groups"] = g.iommu_groups;
        jg["isolation"] = std::string(scan::to_string(g.isolation));
        jg["shares_with"] = addresses(g.shares_with);
        jg["other_endpoints"] = addresses(g.other_endpoints);
        jg["host_critical"] = addresses(g.host_critical);
        jg["boot_vga"] = g.boot_vga;
        jg["numa_node"] = opt(g.numa_node);
        const scan::PciDevice* first = g.functions.empty() ? nullptr : inv.find(g.functions.front());
        jg["name"] = (first != nullptr && !first->device_name.empty()) ? json(first->device_name) : json(nullptr);
        gpus.push_back(std::move(jg));
    }
    return gpus;
}

// The NVSwitches of an NVSwitch system, one entry per slot (empty elsewhere).
json nvswitches_json(const scan::Inventory& inv)
{
    json out = json::array();
    for (const auto& sw : inv.nvswitches) {
        json js;
        js["slot"] = sw.slot;
        js["functions"] = addresses(sw.functions);
        json ids = json::array();
        for (const auto& fn : sw.functions) {
            const auto* d = inv.find(fn);
            ids.push_back(d != nullptr ? d->vendor_device() : std::string());
        }
        js["ids"] = std::move(ids);
        js["iommu_groups"] = sw.iommu_groups;
        js["isolation"] = std::string(scan::to_string(sw.isolation));
        js["shares_with"] = addresses(sw.shares_with);
        js["other_endpoints"] = addresses(sw.other_endpoints);
        js["numa_node"] = opt(sw.numa_node);
        const scan::PciDevice* first = sw.functions.empty() ? nullptr : inv.find(sw.functions.front());
        js["name"] = (first != nullptr && !first->device_name.empty()) ? json(first->device_name) : json(nullptr);
        out.push_back(std::move(js));
    }
    return out;
}

json problems_json(const scan::Inventory& inv)
{
    json problems = json::array();
    for (const auto& p : inv.problems) {
        problems.push_back({{"severity", std::string(scan::to_string(p.severity))}, {"message", p.message}, {"fix", p.fix}});
    }
    return problems;
}

// Pretty-prints a value nested `level` deep in the document.
std::string nested(const json& value, int level)
{
    const std::string pad(static_cast<std::size_t>(level) * 2, ' ');
    // Values come from the host and may hold any bytes: invalid UTF-8 is
    // shown as U+FFFD instead of failing the whole document.
    std::string text = value.dump(2, ' ', false, json::error_handler_t::replace);
    std::string out;
    out.reserve(text.size() + text.size() / 8);
    for (char c : text) {
        out += c;
        if (c == '\n') {
            out += pad;
        }
    }
    return out;
}

} // namespace

nlohmann::json scan_to_json(const scan::Inventory& inv)
{
    json doc;
    doc["schema"] = "passthru.scan/1";
    doc["host"] = host_json(inv);
    json devices = json::array();
    for (const auto& d : inv.devices) {
        devices.push_back(device_json(d));
    }
    doc["devices"] = std::move(devices);
    doc["iommu_groups"] = groups_json(inv);
    doc["gpus"] = gpus_json(inv);
    doc["nvswitches"] = nvswitches_json(inv);
    doc["problems"] = problems_json(inv);
    return doc;
}

void write_scan_json(std::FILE* out, const scan::Inventory& inv)
{
    std::fputs("{\n  \"schema\": \"passthru.scan/1\",\n  \"host\": ", out);
    std::fputs(nested(host_json(inv), 1).c_str(), out);
    std::fputs(",\n  \"devices\": [", out);
    bool first = true;
    for (const auto& d : inv.devices) {
        std::fputs(first ? "\n    " : ",\n    ", out);
        std::fputs(nested(device_json(d), 2).c_str(), out);
        first = false;
    }
    std::fputs(first ? "],\n  \"iommu_groups\": " : "\n  ],\n  \"iommu_groups\": ", out);
    std::fputs(nested(groups_json(inv), 1).c_str(), out);
    std::fputs(",\n  \"gpus\": ", out);
    std::fputs(nested(gpus_json(inv), 1).c_str(), out);
    std::fputs(",\n  \"nvswitches\": ", out);
    std::fputs(nested(nvswitches_json(inv), 1).c_str(), out);
    std::fputs(",\n  \"problems\": ", out);
    std::fputs(nested(problems_json(inv), 1).c_str(), out);
    std::fputs("\n}\n", out);
}

} // namespace passthru::cli
