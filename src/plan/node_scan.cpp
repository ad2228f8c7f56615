// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/node_scan.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "scan/scanner.hpp"
#include "util/json.hpp"
#include "util/local_file.hpp"
#include "util/strings.hpp"

namespace passthru::plan {

namespace {

using nlohmann::json;

// A scan of the largest host is a few MiB; anything far larger is no scan.
constexpr std::size_t k_max_scan_file = std::size_t{64} << 20;

struct SchemaError
{
    std::string message;
};

// The document's own path in errors, as a named string: a reference bound to what
// member() returns for a temporary std::string argument is taken by GCC 14 for a
// dangling one (-Wdangling-reference, a false positive: the result refers into doc).
const std::string k_scan_where{"scan"};

[[noreturn]] void bad(const std::string& where, const std::string& expected)
{
    throw SchemaError{where + ": expected " + expected};
}

const json& member(const json& obj, const char* key, const std::string& where)
{
    if (!obj.is_object()) {
        bad(where, "an object");
    }
    const auto it = obj.find(key);
    if (it == obj.end()) {
        throw SchemaError{where + "." + key + " is missing"};
    }
    return *it;
}

const json& array_at(const json& obj, const char* key, const std::string& where)
{
    const json& v = member(obj, key, where);
    if (!v.is_array()) {
        bad(where + "." + key, "an array");
    }
    return v;
}

bool boolean_at(const json& obj, const char* key, const std::string& where)
{
    const json& v = member(obj, key, where);
    if (!v.is_boolean()) {
        bad(where + "." + key, "true or false");
    }
    return v.get<bool>();
}

std::optional<std::string> opt_text(const json& obj, const char* key, const std::string& where)
{
    const json& v = member(obj, key, where);
    if (v.is_null()) {
        return std::nullopt;
    }
    if (!v.is_string()) {
        bad(where + "." + key, "a string or null");
    }
    return v.get<std::string>();
}

// An integer from 0 to INT_MAX (parsed text gives unsigned numbers, a built document signed ones).
std::optional<int> non_negative(const json& v)
{
    if (v.is_number_unsigned()) {
        const auto n = v.get<std::uint64_t>();
        return n <= static_cast<std::uint64_t>(std::numeric_limits<int>::max()) ? std::optional<int>(static_cast<int>(n)) : std::nullopt;
    }
    if (v.is_number_integer()) {
        const auto n = v.get<std::int64_t>();
        return n >= 0 && n <= std::numeric_limits<int>::max() ? std::optional<int>(static_cast<int>(n)) : std::nullopt;
    }
    return std::nullopt;
}

std::optional<int> opt_count(const json& obj, const char* key, const std::string& where)
{
    const json& v = member(obj, key, where);
    if (v.is_null()) {
        return std::nullopt;
    }
    const auto n = non_negative(v);
    if (!n) {
        bad(where + "." + key, "a non-negative integer or null");
    }
    return n;
}

// DIGITS lower-case hex digits ("10de"), or null.
std::optional<std::uint32_t> opt_hex(const json& obj, const char* key, std::size_t digits, const std::string& where)
{
    const auto text = opt_text(obj, key, where);
    if (!text) {
        return std::nullopt;
    }
    const bool hex = text->size() == digits
                     && std::all_of(text->begin(), text->end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
    if (!hex) {
        bad(where + "." + key, std::to_string(digits) + " lower-case hex digits or null, not '" + *text + "'");
    }
    return static_cast<std::uint32_t>(std::stoul(*text, nullptr, 16));
}

scan::PciAddress address(const json& v, const std::string& where)
{
    const auto parsed = v.is_string() ? scan::PciAddress::parse(v.get<std::string>()) : std::nullopt;
    if (!parsed || parsed->str() != v.get<std::string>()) {
        bad(where, "a PCI address such as 0000:01:00.0");
    }
    return *parsed;
}

std::vector<scan::PciAddress> addresses(const json& obj, const char* key, const std::string& where)
{
    std::vector<scan::PciAddress> out;
    const json& list = array_at(obj, key, where);
    out.reserve(list.size());
    for (std::size_t k = 0; k < list.size(); ++k) {
        out.push_back(address(list[k], where + "." + key + "[" + std::to_string(k) + "]"));
    }
    return out;
}

scan::PciDevice device_of(const json& jd, const std::string& where)
{
    scan::PciDevice d;
    d.address = address(member(jd, "address", where), where + ".address");
    if (const auto v = opt_hex(jd, "vendor", 4, where)) {
        d.vendor = static_cast<std::uint16_t>(*v);
    }
    if (const auto v = opt_hex(jd, "device", 4, where)) {
        d.device = static_cast<std::uint16_t>(*v);
    }
    d.class_code = opt_hex(jd, "class_code", 6, where);
    if (const auto sub = opt_text(jd, "subsystem", where)) {
        const auto vendor = sub->size() == 9 && (*sub)[4] == ':' ? util::parse_hex(sub->substr(0, 4)) : std::nullopt;
        const auto device = sub->size() == 9 && (*sub)[4] == ':' ? util::parse_hex(sub->substr(5)) : std::nullopt;
        if (!vendor || !device || util::to_lower(*sub) != *sub) {
            bad(where + ".subsystem", "vendor:device in lower-case hex (1458:37a9) or null, not '" + *sub + "'");
        }
        d.subsystem_vendor = static_cast<std::uint16_t>(*vendor);
        d.subsystem_device = static_cast<std::uint16_t>(*device);
    }
    d.iommu_group = opt_count(jd, "iommu_group", where);
    d.device_name = opt_text(jd, "device_name", where).value_or("");
    d.driver = opt_text(jd, "driver", where);
    d.is_bridge = boolean_at(jd, "bridge", where);
    const json& sriov = member(jd, "sriov", where);
    d.is_virtfn = boolean_at(sriov, "virtfn", where + ".sriov");
    d.sriov_numvfs = opt_count(sriov, "numvfs", where + ".sriov");
    return d;
}

scan::Isolation isolation_of(const json& jg, const std::string& where)
{
    const json& v = member(jg, "isolation", where);
    for (const auto i : {scan::Isolation::clean, scan::Isolation::shared_with_gpu, scan::Isolation::shared, scan::Isolation::unknown}) {
        if (v.is_string() && v.get<std::string>() == scan::to_string(i)) {
            return i;
        }
    }
    bad(where + ".isolation", "clean, shared-with-gpu, shared or unknown");
}

scan::GpuCard card_of(const json& jg, const scan::Inventory& inv, const std::string& where)
{
    scan::GpuCard g;
    const json& slot = member(jg, "slot", where);
    const auto parsed = slot.is_string() ? scan::parse_slot(slot.get<std::string>()) : std::nullopt;
    if (!parsed || parsed->slot() != slot.get<std::string>()) {
        bad(where + ".slot", "a slot such as 0000:01:00");
    }
    g.slot = slot.get<std::string>();
    const auto vendor = opt_hex(jg, "vendor", 4, where);
    if (!vendor) {
        bad(where + ".vendor", "4 lower-case hex digits");
    }
    g.vendor = static_cast<std::uint16_t>(*vendor);
    g.functions = addresses(jg, "functions", where);
    if (g.functions.empty()) {
        bad(where + ".functions", "at least one function");
    }
    for (const auto& fn : g.functions) {
        if (fn.slot() != g.slot || inv.find(fn) == nullptr) {
            throw SchemaError{where + ".functions: " + fn.str() + " is not a device of slot " + g.slot + " in devices"};
        }
    }
    const json& groups = array_at(jg, "iommu_groups", where);
    for (const auto& n : groups) {
        const auto number = non_negative(n);
        if (!number) {
            bad(where + ".iommu_groups", "non-negative integers");
        }
        g.iommu_groups.push_back(*number);
    }
    g.isolation = isolation_of(jg, where);
    g.shares_with = addresses(jg, "shares_with", where);
    g.other_endpoints = addresses(jg, "other_endpoints", where);
    g.host_critical = addresses(jg, "host_critical", where);
    g.boot_vga = boolean_at(jg, "boot_vga", where);
    return g;
}

void read_devices(const json& doc, scan::Inventory& inv)
{
    const json& devices = array_at(doc, "devices", k_scan_where);
    for (std::size_t k = 0; k < devices.size(); ++k) {
        inv.devices.push_back(device_of(devices[k], "devices[" + std::to_string(k) + "]"));
    }
    std::sort(inv.devices.begin(), inv.devices.end(), [](const auto& a, const auto& b) { return a.address < b.address; });
    const auto twice =
        std::adjacent_find(inv.devices.begin(), inv.devices.end(), [](const auto& a, const auto& b) { return a.address == b.address; });
    if (twice != inv.devices.end()) {
        throw SchemaError{"devices: " + twice->address.str() + " is listed twice"};
    }
}

void read_groups_and_cards(const json& doc, scan::Inventory& inv)
{
    const json& groups = array_at(doc, "iommu_groups", k_scan_where);
    for (std::size_t k = 0; k < groups.size(); ++k) {
        const std::string where = "iommu_groups[" + std::to_string(k) + "]";
        scan::IommuGroup g;
        const auto number = opt_count(groups[k], "group", where);
        if (!number || inv.groups.contains(*number)) {
            bad(where + ".group", "a group number listed once");
        }
        g.number = *number;
        g.devices = addresses(groups[k], "devices", where);
        g.type = opt_text(groups[k], "type", where);
        inv.groups.emplace(g.number, std::move(g));
    }
    const json& gpus = array_at(doc, "gpus", k_scan_where);
    std::set<std::string> slots;
    for (std::size_t k = 0; k < gpus.size(); ++k) {
        const std::string where = "gpus[" + std::to_string(k) + "]";
        inv.gpus.push_back(card_of(gpus[k], inv, where));
        if (!slots.insert(inv.gpus.back().slot).second) {
            throw SchemaError{where + ".slot: " + inv.gpus.back().slot + " is listed twice"};
        }
    }
    std::sort(inv.gpus.begin(), inv.gpus.end(), [](const auto& a, const auto& b) { return a.slot < b.slot; });
}

} // namespace

Result<scan::Inventory> inventory_from_scan_json(const json& doc, const std::string& what, const scan::GpuVendors& vendors)
{
    try {
        const json& schema = member(doc, "schema", k_scan_where);
        if (!schema.is_string() || schema.get<std::string>() != "passthru.scan/1") {
            throw SchemaError{"scan.schema: expected \"passthru.scan/1\" (the output of 'passthru scan --json')"};
        }
        scan::Inventory inv;
        const json& host = member(doc, "host", k_scan_where);
        inv.host.kernel = opt_text(host, "kernel", "host");
        inv.host.iommu.enabled = boolean_at(member(host, "iommu", "host"), "enabled", "host.iommu");
        read_devices(doc, inv);
        read_groups_and_cards(doc, inv);
        inv.host.iommu.groups = static_cast<int>(inv.groups.size());
        if (!array_at(doc, "nvswitches", "scan").empty()) {
            return tl::unexpected(Error(Errc::precondition, what
                                                                + ": an NVSwitch system, whose switches go with its GPUs; "
                                                                  "a cluster mapping from --node-scan does not map NVSwitches")
                                      .with_hint("map that node from its own 'passthru plan --vm VMID --gpus ... --mapping NAME'"));
        }
        scan::assign_vendors(inv, vendors);
        return inv;
    } catch (const SchemaError& e) {
        return tl::unexpected(
            Error(Errc::usage, what + ": " + e.message).with_hint("give the file 'passthru scan --json' printed on that node"));
    }
}

Result<scan::Inventory> read_node_scan(const NodeScan& node_scan, const scan::GpuVendors& vendors)
{
    const std::string what = "--node-scan " + node_scan.node + "=" + node_scan.file;
    auto text = util::read_local_file(node_scan.file, k_max_scan_file);
    if (!text) {
        return tl::unexpected(Error(Errc::usage, what + ": " + text.error().what())
                                  .with_hint("save the node's scan with 'passthru scan --json > FILE' on that node"));
    }
    auto doc = util::parse_json(*text, what, Errc::usage);
    if (!doc) {
        return tl::unexpected(doc.error());
    }
    return inventory_from_scan_json(*doc, what, vendors);
}

} // namespace passthru::plan
