// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/node_scan.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "data/schema.hpp"
#include "format/grammar.hpp"
#include "scan/scanner.hpp"
#include "util/json.hpp"
#include "util/local_file.hpp"
#include "util/strings.hpp"

namespace passthru::plan {

namespace {

using data::Field;
using data::SchemaError;

constexpr std::string_view k_scan_schema = "passthru.scan/1";

// A scan of the largest host is a few MiB; anything far larger is no scan.
constexpr std::size_t k_max_scan_file = std::size_t{64} << 20;

// A member the document must have, null or not (a getter says "is missing" by
// itself; these fields accept null, which a missing member reads as).
void require(const Field& field)
{
    if (!field.present()) {
        field.fail("is missing");
    }
}

// Every string plan reads of a scan document comes through here, checked
// against its grammar (format/grammar.hpp): the document comes from another
// node, and its text reaches generated files (a device name becomes the
// description of a cluster mapping in /etc/pve/mapping/pci.cfg).
std::optional<std::string> opt_text(const Field& field, format::Grammar grammar)
{
    require(field);
    if (field.is_null()) {
        return std::nullopt;
    }
    if (!field.is_string()) {
        field.expected("a string or null");
    }
    std::string text = field.string();
    if (auto bad = format::invalid_value(grammar, text, "")) {
        field.expected(std::string(format::describe(grammar)) + " or null");
    }
    return text;
}

// An integer from 0 to INT_MAX (parsed text gives unsigned numbers, a built document signed ones).
std::optional<int> non_negative(const Field& field)
{
    const auto n = field.if_integer();
    return n && *n >= 0 && *n <= std::numeric_limits<int>::max() ? std::optional<int>(static_cast<int>(*n)) : std::nullopt;
}

std::optional<int> opt_count(const Field& field)
{
    require(field);
    if (field.is_null()) {
        return std::nullopt;
    }
    const auto n = non_negative(field);
    if (!n) {
        field.expected("a non-negative integer or null");
    }
    return n;
}

// DIGITS lower-case hex digits ("10de"), or null.
std::optional<std::uint32_t> opt_hex(const Field& field, std::size_t digits)
{
    const auto text = opt_text(field, format::Grammar::line_text);
    if (!text) {
        return std::nullopt;
    }
    const bool hex = text->size() == digits
                     && std::all_of(text->begin(), text->end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
    if (!hex) {
        field.expected(std::to_string(digits) + " lower-case hex digits or null, not '" + *text + "'");
    }
    return static_cast<std::uint32_t>(std::stoul(*text, nullptr, 16));
}

scan::PciAddress address(const Field& field)
{
    const auto text = field.if_string().value_or("");
    const auto parsed = scan::PciAddress::parse(text);
    if (!parsed || parsed->str() != text) {
        field.expected("a PCI address such as 0000:01:00.0");
    }
    return *parsed;
}

std::vector<scan::PciAddress> addresses(const Field& list)
{
    std::vector<scan::PciAddress> out;
    out.reserve(list.size());
    for (std::size_t k = 0; k < list.size(); ++k) {
        out.push_back(address(list[k]));
    }
    return out;
}

scan::PciDevice device_of(const Field& jd)
{
    jd.object();
    scan::PciDevice d;
    d.address = address(jd["address"]);
    if (const auto v = opt_hex(jd["vendor"], 4)) {
        d.vendor = static_cast<std::uint16_t>(*v);
    }
    if (const auto v = opt_hex(jd["device"], 4)) {
        d.device = static_cast<std::uint16_t>(*v);
    }
    d.class_code = opt_hex(jd["class_code"], 6);
    if (const auto sub = opt_text(jd["subsystem"], format::Grammar::line_text)) {
        const auto vendor = sub->size() == 9 && (*sub)[4] == ':' ? util::parse_hex(sub->substr(0, 4)) : std::nullopt;
        const auto device = sub->size() == 9 && (*sub)[4] == ':' ? util::parse_hex(sub->substr(5)) : std::nullopt;
        if (!vendor || !device || util::to_lower(*sub) != *sub) {
            jd["subsystem"].expected("vendor:device in lower-case hex (1458:37a9) or null, not '" + *sub + "'");
        }
        d.subsystem_vendor = static_cast<std::uint16_t>(*vendor);
        d.subsystem_device = static_cast<std::uint16_t>(*device);
    }
    d.iommu_group = opt_count(jd["iommu_group"]);
    d.device_name = opt_text(jd["device_name"], format::Grammar::line_text).value_or("");
    d.driver = opt_text(jd["driver"], format::Grammar::module_name);
    d.is_bridge = jd["bridge"].boolean();
    const Field sriov = jd["sriov"];
    sriov.object();
    d.is_virtfn = sriov["virtfn"].boolean();
    d.sriov_numvfs = opt_count(sriov["numvfs"]);
    return d;
}

scan::Isolation isolation_of(const Field& field)
{
    const auto v = field.if_string();
    for (const auto i : {scan::Isolation::clean, scan::Isolation::shared_with_gpu, scan::Isolation::shared, scan::Isolation::unknown}) {
        if (v && *v == scan::to_string(i)) {
            return i;
        }
    }
    field.expected("clean, shared-with-gpu, shared or unknown");
}

scan::GpuCard card_of(const Field& jg, const scan::Inventory& inv)
{
    jg.object();
    scan::GpuCard g;
    const Field slot = jg["slot"];
    g.slot = slot.if_string().value_or("");
    const auto parsed = scan::parse_slot(g.slot);
    if (!parsed || parsed->slot() != g.slot) {
        slot.expected("a slot such as 0000:01:00");
    }
    const auto vendor = opt_hex(jg["vendor"], 4);
    if (!vendor) {
        jg["vendor"].expected("4 lower-case hex digits");
    }
    g.vendor = static_cast<std::uint16_t>(*vendor);
    g.functions = addresses(jg["functions"]);
    if (g.functions.empty()) {
        jg["functions"].expected("at least one function");
    }
    for (const auto& fn : g.functions) {
        if (fn.slot() != g.slot || inv.find(fn) == nullptr) {
            throw SchemaError{jg["functions"].path() + ": " + fn.str() + " is not a device of slot " + g.slot + " in devices"};
        }
    }
    const Field groups = jg["iommu_groups"];
    for (std::size_t k = 0; k < groups.size(); ++k) {
        const auto number = non_negative(groups[k]);
        if (!number) {
            groups.expected("non-negative integers");
        }
        g.iommu_groups.push_back(*number);
    }
    g.isolation = isolation_of(jg["isolation"]);
    g.shares_with = addresses(jg["shares_with"]);
    g.other_endpoints = addresses(jg["other_endpoints"]);
    g.host_critical = addresses(jg["host_critical"]);
    g.boot_vga = jg["boot_vga"].boolean();
    return g;
}

void read_devices(const Field& doc, scan::Inventory& inv)
{
    const Field devices = doc["devices"];
    for (std::size_t k = 0; k < devices.size(); ++k) {
        inv.devices.push_back(device_of(devices[k]));
    }
    std::sort(inv.devices.begin(), inv.devices.end(), [](const auto& a, const auto& b) { return a.address < b.address; });
    const auto twice =
        std::adjacent_find(inv.devices.begin(), inv.devices.end(), [](const auto& a, const auto& b) { return a.address == b.address; });
    if (twice != inv.devices.end()) {
        throw SchemaError{"devices: " + twice->address.str() + " is listed twice"};
    }
}

void read_groups_and_cards(const Field& doc, scan::Inventory& inv)
{
    const Field groups = doc["iommu_groups"];
    for (std::size_t k = 0; k < groups.size(); ++k) {
        groups[k].object();
        scan::IommuGroup g;
        const auto number = opt_count(groups[k]["group"]);
        if (!number || inv.groups.contains(*number)) {
            groups[k]["group"].expected("a group number listed once");
        }
        g.number = *number;
        g.devices = addresses(groups[k]["devices"]);
        g.type = opt_text(groups[k]["type"], format::Grammar::line_text);
        inv.groups.emplace(g.number, std::move(g));
    }
    const Field gpus = doc["gpus"];
    std::set<std::string> slots;
    for (std::size_t k = 0; k < gpus.size(); ++k) {
        inv.gpus.push_back(card_of(gpus[k], inv));
        if (!slots.insert(inv.gpus.back().slot).second) {
            throw SchemaError{gpus[k]["slot"].path() + ": " + inv.gpus.back().slot + " is listed twice"};
        }
    }
    std::sort(inv.gpus.begin(), inv.gpus.end(), [](const auto& a, const auto& b) { return a.slot < b.slot; });
}

// What plan reads of a scan document, and whether it lists NVSwitches.
struct ScanDocument
{
    scan::Inventory inv;
    bool nvswitches = false;
};

// The fields of passthru.scan/1 plan reads; the many others (docs/scan-json.md)
// are left alone: a scan is another program's output, not a data file of
// passthru's, so no field is refused for being unknown.
ScanDocument parse_scan(const Field& doc)
{
    ScanDocument out;
    scan::Inventory& inv = out.inv;
    const Field host = doc["host"];
    host.object();
    inv.host.kernel = opt_text(host["kernel"], format::Grammar::kernel_release);
    host["iommu"].object();
    inv.host.iommu.enabled = host["iommu"]["enabled"].boolean();
    read_devices(doc, inv);
    read_groups_and_cards(doc, inv);
    inv.host.iommu.groups = static_cast<int>(inv.groups.size());
    out.nvswitches = doc["nvswitches"].size() != 0;
    return out;
}

// A device's group (its iommu_group) and the group's member list must agree:
// the isolation verdict is computed from both.
std::optional<std::string> group_mismatch(const scan::Inventory& inv)
{
    for (const auto& d : inv.devices) {
        if (!d.iommu_group) {
            continue;
        }
        const auto g = inv.groups.find(*d.iommu_group);
        if (g == inv.groups.end() || std::find(g->second.devices.begin(), g->second.devices.end(), d.address) == g->second.devices.end()) {
            return "devices: " + d.address.str() + " names IOMMU group " + std::to_string(*d.iommu_group)
                   + ", whose devices do not list it";
        }
    }
    for (const auto& [number, g] : inv.groups) {
        for (const auto& a : g.devices) {
            const auto* d = inv.find(a);
            if (d == nullptr || d->iommu_group != number) {
                return "iommu_groups: group " + std::to_string(number) + " lists " + a.str() + ", which "
                       + (d == nullptr ? std::string("is not in devices") : "devices does not put in that group");
            }
        }
    }
    return std::nullopt;
}

// The cards and their verdicts are decided from the devices and groups, as
// scan decides them on this host; the document's own "gpus" must say the same.
std::optional<std::string> card_mismatch(const std::vector<scan::GpuCard>& said, const std::vector<scan::GpuCard>& found)
{
    for (const auto& card : said) {
        const auto it = std::find_if(found.begin(), found.end(), [&](const scan::GpuCard& c) { return c.slot == card.slot; });
        if (it == found.end()) {
            return "gpus: " + card.slot + " is no display device in devices";
        }
        if (it->isolation != card.isolation) {
            std::string why = it->host_critical.empty() ? std::string()
                                                        : " (" + it->host_critical.front().str() + ", a storage or network controller, "
                                                              + "shares its IOMMU group)";
            return "gpus: " + card.slot + " says '" + std::string(scan::to_string(card.isolation)) + "', its devices and groups make it '"
                   + std::string(scan::to_string(it->isolation)) + "'" + why;
        }
        auto listed = card.functions;
        std::sort(listed.begin(), listed.end());
        if (it->functions != listed) {
            return "gpus: " + card.slot + " lists other functions than devices has for that slot";
        }
    }
    for (const auto& card : found) {
        if (std::none_of(said.begin(), said.end(), [&](const scan::GpuCard& c) { return c.slot == card.slot; })) {
            return "gpus: the display device " + card.slot + " of devices is not listed";
        }
    }
    return std::nullopt;
}

} // namespace

Result<scan::Inventory> inventory_from_scan_json(const nlohmann::json& doc, const std::string& what, const scan::GpuVendors& vendors)
{
    auto read = data::load_document<ScanDocument>(doc, what, k_scan_schema, parse_scan);
    if (!read) {
        return tl::unexpected(std::move(read.error()).with_hint("give the file 'passthru scan --json' printed on that node"));
    }
    if (read->nvswitches) {
        return tl::unexpected(Error(Errc::precondition, what
                                                            + ": an NVSwitch system, whose switches go with its GPUs; "
                                                              "a cluster mapping from --node-scan does not map NVSwitches")
                                  .with_hint("map that node from its own 'passthru plan --vm VMID --gpus ... --mapping NAME'"));
    }
    scan::Inventory& inv = read->inv;
    auto refuse = [&what](const std::string& why) {
        return tl::unexpected(
            Error(Errc::usage, what + ": " + why).with_hint("give the file 'passthru scan --json' printed on that node, unedited"));
    };
    if (auto bad = group_mismatch(inv)) {
        return refuse(*bad);
    }
    auto found = scan::find_gpu_cards(inv.devices, inv.groups, vendors);
    if (auto bad = card_mismatch(inv.gpus, found)) {
        return refuse(*bad);
    }
    if (!scan::find_nvswitches(inv.devices, inv.groups, vendors).empty()) {
        return tl::unexpected(
            Error(Errc::precondition, what
                                          + ": an NVSwitch system (its devices hold fabric switches), whose switches "
                                            "go with its GPUs; a cluster mapping from --node-scan does not map NVSwitches"));
    }
    for (auto& card : found) {
        const auto it = std::find_if(inv.gpus.begin(), inv.gpus.end(), [&](const scan::GpuCard& c) { return c.slot == card.slot; });
        card.boot_vga = card.boot_vga || (it != inv.gpus.end() && it->boot_vga);
    }
    inv.gpus = std::move(found);
    scan::assign_vendors(inv, vendors);
    return std::move(inv);
}

Result<scan::Inventory> read_node_scan(const NodeScan& node_scan, const scan::GpuVendors& vendors)
{
    const std::string what = "--node-scan " + node_scan.node + "=" + node_scan.file;
    auto text = util::read_local_file(node_scan.file, k_max_scan_file);
    if (!text) {
        return tl::unexpected(Error(Errc::usage, what + ": " + text.error().what())
                                  .with_hint("save the node's scan with 'passthru scan --json > FILE' on that node"));
    }
    PASSTHRU_TRY_ASSIGN(const auto doc, util::parse_json(*text, what, Errc::usage));
    return inventory_from_scan_json(doc, what, vendors);
}

} // namespace passthru::plan
