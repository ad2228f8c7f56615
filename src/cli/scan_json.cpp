// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/scan_json.hpp"

#include <string>
#include <string_view>

#include "scan/card_users.hpp"
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
    jhost["char_majors"] = host.char_majors;
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

// The text nlohmann::json's dump() gives a device_json() value nested
// `level` deep (2-space indent, keys in order, invalid UTF-8 shown as
// U+FFFD), written directly: a large scan spent most of its single-threaded
// time building and dumping one JSON tree per function (bench/PROFILE.md).
// tests/unit/test_cli_scan_json.cpp holds it to dump() byte for byte.
class DeviceWriter
{
public:
    DeviceWriter(std::string& out, int level) : m_out(out), m_level(level) {}

    void enter(char bracket)
    {
        m_out += bracket;
        ++m_level;
        m_first = true;
    }
    void leave(char bracket)
    {
        --m_level;
        if (!m_first) {
            newline();
        }
        m_out += bracket;
        m_first = false;
    }
    // An element's place: a comma after the previous one, a new line, the indent.
    void item()
    {
        if (!m_first) {
            m_out += ',';
        }
        newline();
        m_first = false;
    }
    void key(std::string_view k)
    {
        item();
        m_out += '"';
        m_out += k;
        m_out += "\": ";
    }
    void text(std::string_view v)
    {
        for (unsigned char c : v) {
            if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
                m_out += json(std::string(v)).dump(-1, ' ', false, json::error_handler_t::replace);
                return;
            }
        }
        m_out += '"';
        m_out += v;
        m_out += '"';
    }
    void null() { m_out += "null"; }
    void boolean(bool b) { m_out += b ? "true" : "false"; }
    void number(long long n) { m_out += std::to_string(n); }
    template<typename T>
    void opt_number(const std::optional<T>& v)
    {
        v ? number(*v) : null();
    }
    void opt_text(const std::optional<std::string>& v) { v ? text(*v) : null(); }
    void name(const std::string& v) { v.empty() ? null() : text(v); }
    void strings(const std::vector<std::string>& list)
    {
        if (list.empty()) {
            m_out += "[]";
            return;
        }
        enter('[');
        for (const auto& v : list) {
            item();
            text(v);
        }
        leave(']');
    }
    void hex(std::optional<std::uint64_t> v, int width) { v ? text(util::hex(*v, width)) : null(); }

private:
    void newline()
    {
        m_out += '\n';
        m_out.append(static_cast<std::size_t>(m_level) * 2, ' ');
    }
    std::string& m_out;
    int m_level;
    bool m_first = true;
};

void write_link(DeviceWriter& w, const std::optional<scan::LinkInfo>& link)
{
    if (!link) {
        w.null();
        return;
    }
    w.enter('{');
    w.key("max_speed");
    w.opt_text(link->max_speed);
    w.key("max_width");
    w.opt_number(link->max_width);
    w.key("speed");
    w.opt_text(link->speed);
    w.key("width");
    w.opt_number(link->width);
    w.leave('}');
}

void write_net_links(DeviceWriter& w, const std::vector<scan::NetLink>& links)
{
    if (links.empty()) {
        w.strings({});
        return;
    }
    w.enter('[');
    for (const auto& l : links) {
        w.item();
        w.enter('{');
        w.key("ifindex");
        w.opt_number(l.ifindex);
        w.key("mac");
        w.text(l.mac);
        w.key("name");
        w.text(l.name);
        w.key("perm_mac");
        w.text(l.perm_mac);
        w.leave('}');
    }
    w.leave(']');
}

// The keys after "link", in order.
void write_device_rest(DeviceWriter& w, const scan::PciDevice& d)
{
    w.key("net");
    w.strings(d.net_interfaces);
    w.key("net_links");
    write_net_links(w, d.net_links);
    w.key("numa_node");
    w.opt_number(d.numa_node);
    w.key("parent");
    d.parent ? w.text(d.parent->str()) : w.null();
    w.key("reset_method");
    w.strings(d.reset_methods);
    w.key("revision");
    w.hex(d.revision, 2);
    w.key("sriov");
    w.enter('{');
    w.key("numvfs");
    w.opt_number(d.sriov_numvfs);
    w.key("physfn");
    d.physfn ? w.text(d.physfn->str()) : w.null();
    w.key("totalvfs");
    w.opt_number(d.sriov_totalvfs);
    w.key("virtfn");
    w.boolean(d.is_virtfn);
    w.leave('}');
    w.key("subsystem");
    (d.subsystem_vendor && d.subsystem_device) ? w.text(util::hex(*d.subsystem_vendor, 4) + ":" + util::hex(*d.subsystem_device, 4))
                                               : w.null();
    w.key("vendor");
    w.hex(d.vendor, 4);
    w.key("vendor_name");
    w.name(d.vendor_name);
}

} // namespace

void append_device_json(std::string& out, const scan::PciDevice& d, int level)
{
    DeviceWriter w(out, level);
    w.enter('{');
    w.key("acs");
    w.boolean(d.has_acs);
    w.key("address");
    w.text(d.address.str());
    w.key("boot_vga");
    w.boolean(d.boot_vga);
    w.key("bridge");
    w.boolean(d.is_bridge);
    w.key("class");
    w.hex(d.class16(), 4);
    w.key("class_code");
    w.hex(d.class_code, 6);
    w.key("class_name");
    w.name(d.class_name);
    w.key("device");
    w.hex(d.device, 4);
    w.key("device_name");
    w.name(d.device_name);
    w.key("driver");
    w.opt_text(d.driver);
    w.key("driver_override");
    w.opt_text(d.driver_override);
    w.key("iommu_group");
    w.opt_number(d.iommu_group);
    w.key("link");
    write_link(w, d.link);
    write_device_rest(w, d);
    w.leave('}');
}

nlohmann::json device_to_json(const scan::PciDevice& d)
{
    return device_json(d);
}

namespace {

json groups_json(const scan::Inventory& inv)
{
    json groups = json::array();
    for (const auto& [number, group] : inv.groups) {
        groups.push_back({{"group", number}, {"type", opt(group.type)}, {"devices", addresses(group.devices)}});
    }
    return groups;
}

// The guest config lines that reach a card (scan/card_users.hpp).
json users_json(const scan::GpuCard& card)
{
    json users = json::array();
    for (const auto& u : card.users) {
        users.push_back({{"kind", u.kind == scan::GuestKind::vm ? "vm" : "container"},
                         {"vmid", u.vmid},
                         {"config", u.config},
                         {"line", u.line},
                         {"key", u.key},
                         {"value", u.value},
                         {"pending", u.pending},
                         {"wildcard", u.wildcard},
                         {"via", u.via},
                         {"running", u.running}});
    }
    return users;
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
        jg["nvidia"] = g.vendor_row != nullptr; // a card of a vendor in profiles/host/vendors.json
        jg["functions"] = addresses(g.functions);
        jg["iommu_groups"] = g.iommu_groups;
        jg["isolation"] = std::string(scan::to_string(g.isolation));
        jg["shares_with"] = addresses(g.shares_with);
        jg["other_endpoints"] = addresses(g.other_endpoints);
        jg["host_critical"] = addresses(g.host_critical);
        jg["goes_along"] = addresses(g.goes_along);
        jg["boot_vga"] = g.boot_vga;
        jg["numa_node"] = opt(g.numa_node);
        const scan::PciDevice* first = inv.first_function(g);
        jg["name"] = (first != nullptr && !first->device_name.empty()) ? json(first->device_name) : json(nullptr);
        jg["driver"] = opt(g.driver);
        jg["nvidia_minor"] = opt(g.nvidia_minor);
        jg["owner"] = scan::card_owner(g);
        jg["users"] = users_json(g);
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
        const scan::PciDevice* first = inv.first_function(sw);
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
    std::string text;
    for (const auto& d : inv.devices) {
        text.assign(first ? "\n    " : ",\n    ");
        append_device_json(text, d, 2);
        std::fwrite(text.data(), 1, text.size(), out);
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
