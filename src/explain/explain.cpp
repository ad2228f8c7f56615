// SPDX-License-Identifier: GPL-2.0-or-later
#include "explain/explain.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <set>

#include "apply/journal.hpp"
#include "apply/rollback.hpp"
#include "apply/verify.hpp"
#include "format/lxc_config.hpp"
#include "format/pve_config.hpp"
#include "scan/card_state.hpp"
#include "util/lex.hpp"
#include "util/strings.hpp"

namespace passthru::explain {

std::string_view to_string(Verdict verdict)
{
    switch (verdict) {
    case Verdict::explained:
        return "explained";
    case Verdict::unexplained:
        return "unexplained";
    case Verdict::no_failure:
        return "no_failure";
    }
    return "no_failure";
}

namespace {

std::optional<StartTask> read_start_task(const util::HostFs& fs, std::uint64_t vmid, Report& report)
{
    const std::string_view type = report.guest == scan::GuestKind::container ? "vzstart" : "qmstart";
    auto entry = latest_task(fs, type, std::to_string(vmid), report.unreadable_index_lines);
    if (!entry) {
        return std::nullopt;
    }
    StartTask task;
    task.log_path = task_log_path(entry->upid);
    task.failed = entry->endtime.has_value() && status_is_error(entry->status);
    if (auto text = fs.read_file(task.log_path)) {
        task.log_found = true;
        task.lines = split_log_lines(*text);
    } else {
        report.notes.push_back("the task's log " + task.log_path + " is missing: only its status in the index is known");
        if (task.failed) {
            task.lines.push_back("TASK ERROR: " + entry->status);
        }
    }
    task.entry = std::move(*entry);
    return task;
}

std::optional<std::uint64_t> hex_at(std::string_view s, std::size_t pos)
{
    const auto is_hex = [](char c) { return util::lex::is_xdigit_lower(c) || (c >= 'A' && c <= 'F'); };
    const std::size_t n = util::lex::span(s, pos, is_hex);
    if (n == 0 || n > 16) {
        return std::nullopt;
    }
    return std::stoull(std::string(s.substr(pos, n)), nullptr, 16);
}

// The bytes of a kernel resource: "[mem size 0x800000000 64bit pref]" or "[mem 0xc0000000-0xcfffffff ...]".
std::optional<std::uint64_t> range_bytes(std::string_view range)
{
    if (const auto at = range.find("size 0x"); at != std::string_view::npos) {
        return hex_at(range, at + 7);
    }
    const auto first = range.find("0x");
    const auto dash = first == std::string_view::npos ? first : range.find("-0x", first);
    if (dash == std::string_view::npos) {
        return std::nullopt;
    }
    const auto start = hex_at(range, first + 2);
    const auto end = hex_at(range, dash + 3);
    if (!start || !end || *end < *start || *end - *start == UINT64_MAX) {
        return std::nullopt;
    }
    return *end - *start + 1;
}

// "32 GiB", "256 MiB": the largest unit the size has one of (rounded down).
std::string bytes_text(std::uint64_t bytes)
{
    constexpr const char* k_units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    std::size_t unit = 0;
    while (bytes >= 1024 && unit + 1 < std::size(k_units)) {
        bytes /= 1024;
        ++unit;
    }
    return std::to_string(bytes) + " " + k_units[unit];
}

// The facts of this host a cause or fix may name (signature.hpp: k_host_placeholders).
class HostFacts
{
public:
    HostFacts(const ExplainInput& in, const Report& report) : m_in(in), m_report(report) {}

    std::map<std::string, std::string> values(const std::map<std::string, std::string>& captures) const
    {
        std::map<std::string, std::string> v = captures;
        v["vmid"] = std::to_string(m_in.vmid);
        v["guest"] = (m_report.guest == scan::GuestKind::container ? "container " : "VM ") + std::to_string(m_in.vmid);
        const auto& host = m_in.inventory.host;
        v["nvidia_version"] = host.nvidia_loaded ? host.nvidia_version.value_or("unknown") : "not loaded";
        v["nvidia_nodes"] = nvidia_nodes();
        v["address_bits"] = host.phys_address_bits ? std::to_string(*host.phys_address_bits) : "an unknown number of";
        v["interrupt_remapping"] = !host.iommu.interrupt_remapping ? "unknown" : (*host.iommu.interrupt_remapping ? "yes" : "no");
        const auto pci = captures.contains("pci") ? scan::PciAddress::parse(captures.at("pci")) : std::nullopt;
        const scan::PciDevice* dev = pci ? m_in.inventory.find(*pci) : nullptr;
        if (pci) {
            v["driver"] = dev == nullptr ? "not on this host" : dev->driver.value_or("no driver");
        }
        std::optional<int> group;
        if (captures.contains("group")) {
            group = std::stoi(captures.at("group").substr(0, 9));
        } else if (dev != nullptr && dev->iommu_group) {
            group = dev->iommu_group;
            v["group"] = std::to_string(*group);
        }
        if (group) {
            v["group_members"] = group_members(*group, pci);
        }
        v["gpus"] = gpus(pci);
        const auto bytes = captures.contains("range") ? range_bytes(captures.at("range")) : std::nullopt;
        v["bar_size"] = bytes ? bytes_text(*bytes) : "of unknown size";
        return v;
    }

    // Whether the group named by the captures (or the group of their device) holds a device
    // that is neither a bridge nor a function of the device's card or of the VM's cards.
    bool other_devices_in_group(const std::map<std::string, std::string>& captures) const
    {
        const auto pci = captures.contains("pci") ? scan::PciAddress::parse(captures.at("pci")) : std::nullopt;
        const scan::PciDevice* dev = pci ? m_in.inventory.find(*pci) : nullptr;
        std::optional<int> group;
        if (captures.contains("group")) {
            group = std::stoi(captures.at("group").substr(0, 9));
        } else if (dev != nullptr) {
            group = dev->iommu_group;
        }
        const auto it = group ? m_in.inventory.groups.find(*group) : m_in.inventory.groups.end();
        if (it == m_in.inventory.groups.end()) {
            return false;
        }
        std::set<std::string> slots;
        for (const auto& s : util::split(gpus(pci), ",")) {
            slots.insert(s);
        }
        return std::any_of(it->second.devices.begin(), it->second.devices.end(), [&](const scan::PciAddress& addr) {
            const auto* d = m_in.inventory.find(addr);
            const auto* card = m_in.inventory.gpu_of(addr);
            return d != nullptr && !d->is_bridge && (card == nullptr || !slots.contains(card->slot));
        });
    }

private:
    // "0000:81:00 /dev/nvidia0, 0000:82:00 /dev/nvidia1": the cards on nvidia and their nodes now.
    std::string nvidia_nodes() const
    {
        std::string out;
        for (const auto& card : m_in.inventory.gpus) {
            if (card.nvidia_minor) {
                out += (out.empty() ? "" : ", ") + card.slot + " /dev/nvidia" + std::to_string(*card.nvidia_minor);
            }
        }
        return out.empty() ? "none" : out;
    }

    // The other devices of a group (not `pci`, no bridges), with their drivers.
    std::string group_members(int group, const std::optional<scan::PciAddress>& pci) const
    {
        const auto it = m_in.inventory.groups.find(group);
        if (it == m_in.inventory.groups.end()) {
            return "no group " + std::to_string(group) + " on this host";
        }
        std::string out;
        for (const auto& addr : it->second.devices) {
            const auto* d = m_in.inventory.find(addr);
            if ((pci && addr == *pci) || d == nullptr || d->is_bridge) {
                continue;
            }
            out += (out.empty() ? "" : ", ") + addr.str() + " (" + d->driver.value_or("no driver") + ")";
        }
        return out.empty() ? "no other device" : out;
    }

    // The cards to name in `passthru plan --gpus`: the card of `pci`, else the VM's cards.
    std::string gpus(const std::optional<scan::PciAddress>& pci) const
    {
        if (pci) {
            if (const auto* card = m_in.inventory.gpu_of(*pci)) {
                return card->slot;
            }
        }
        std::set<std::string> slots;
        for (const auto& f : m_report.vm_functions) {
            if (const auto a = scan::PciAddress::parse(f)) {
                if (const auto* card = m_in.inventory.gpu_of(*a)) {
                    slots.insert(card->slot);
                }
            }
        }
        std::string out;
        for (const auto& s : slots) {
            out += (out.empty() ? "" : ",") + s;
        }
        return out.empty() ? "all" : out;
    }

    const ExplainInput& m_in;
    const Report& m_report;
};

Cause make_cause(const Signature& sig, const std::string& line, const std::map<std::string, std::string>& captures, const HostFacts& facts,
                 std::uint64_t vmid)
{
    const auto values = facts.values(captures);
    Cause c{sig.id,       sig.where,  line,    fill_placeholders(sig.cause, values), fill_placeholders(sig.fix, values),
            std::nullopt, sig.source, captures};
    if (sig.plan_option) {
        const bool add =
            !sig.plan_option->empty() && (sig.plan_option_when == OptionWhen::always || facts.other_devices_in_group(captures));
        c.command = "passthru plan --vm " + std::to_string(vmid) + " --gpus " + values.at("gpus") + (add ? " " + *sig.plan_option : "");
    }
    return c;
}

// A kernel message about a device or group this VM does not pass says nothing about its start.
bool concerns_vm(const std::map<std::string, std::string>& captures, const Report& report, const scan::Inventory& inv)
{
    if (report.vm_functions.empty()) {
        return true;
    }
    std::set<int> groups;
    for (const auto& f : report.vm_functions) {
        if (const auto a = scan::PciAddress::parse(f); a && inv.find(*a) != nullptr && inv.find(*a)->iommu_group) {
            groups.insert(*inv.find(*a)->iommu_group);
        }
    }
    if (const auto it = captures.find("pci"); it != captures.end()) {
        return std::find(report.vm_functions.begin(), report.vm_functions.end(), it->second) != report.vm_functions.end();
    }
    if (const auto it = captures.find("group"); it != captures.end()) {
        return groups.contains(std::stoi(it->second.substr(0, 9)));
    }
    return true;
}

void match_task_log(const ExplainInput& in, const HostFacts& facts, Report& report)
{
    std::set<std::pair<std::string, std::map<std::string, std::string>>> seen; // QEMU repeats some messages per reset
    for (const auto& line : report.task->lines) {
        bool placed = false;
        for (const auto& sig : in.signatures) {
            if (sig.where != LogKind::task_log) {
                continue;
            }
            if (auto captures = sig.pattern.match(line)) {
                if (seen.emplace(sig.id, *captures).second) {
                    report.causes.push_back(make_cause(sig, line, *captures, facts, in.vmid));
                }
                placed = true;
                break;
            }
        }
        if (!placed && !line.empty()) {
            report.unplaced.push_back(line);
        }
    }
}

void match_kernel_log(const ExplainInput& in, const HostFacts& facts, Report& report)
{
    std::set<std::pair<std::string, std::map<std::string, std::string>>> seen; // one cause per message, however often logged
    for (const auto& message : in.kernel.messages) {
        for (const auto& sig : in.signatures) {
            if (sig.where != LogKind::kernel_log) {
                continue;
            }
            auto captures = sig.pattern.match(message);
            if (!captures || !concerns_vm(*captures, report, in.inventory) || !seen.emplace(sig.id, *captures).second) {
                continue;
            }
            report.causes.push_back(make_cause(sig, message, *captures, facts, in.vmid));
        }
    }
}

// A card of the VM's that did not come back from its last run (scan/card_state.hpp):
// the reason the next start fails whatever the logs say.
void card_state_notes(const scan::Inventory& inventory, Report& report)
{
    for (const auto& card : inventory.gpus) {
        const bool passed = std::any_of(card.functions.begin(), card.functions.end(), [&](const scan::PciAddress& a) {
            return std::find(report.vm_functions.begin(), report.vm_functions.end(), a.str()) != report.vm_functions.end();
        });
        if (const auto state = scan::card_state(inventory, card); passed && state.did_not_come_back()) {
            report.notes.push_back("GPU " + card.slot + " did not come back: " + util::join(state.stuck, "; ") + "; " + state.fix);
        }
    }
}

void read_vm_config(const ExplainInput& in, Report& report)
{
    const std::string path = "/etc/pve/qemu-server/" + std::to_string(in.vmid) + ".conf";
    auto text = in.fs.read_file(path);
    if (!text) {
        report.notes.push_back("VM " + std::to_string(in.vmid) + " has no config here (" + path + ")");
        return;
    }
    report.vm_name = format::pve::VmConfig::parse(*text).get("name");
    if (auto fns = apply::vm_config_functions(in.inventory, in.fs, in.vmid)) {
        for (const auto& f : *fns) {
            report.vm_functions.push_back(f.str());
        }
    }
    if (report.vm_functions.empty()) {
        report.notes.push_back("VM " + std::to_string(in.vmid) + "'s config passes no PCI function of this host");
    }
    card_state_notes(in.inventory, report);
}

// A container's config: its hostname, and the functions of the cards its lines reach (scan's card users).
void read_ct_config(const ExplainInput& in, Report& report)
{
    const std::string id = std::to_string(in.vmid);
    const auto text = in.fs.read_file("/etc/pve/lxc/" + id + ".conf");
    if (text) {
        report.vm_name = format::lxc::CtConfig::parse(*text).get("hostname");
    }
    for (const auto& card : in.inventory.gpus) {
        const bool used = std::any_of(card.users.begin(), card.users.end(),
                                      [&](const scan::CardUser& u) { return u.kind == scan::GuestKind::container && u.vmid == id; });
        if (used) {
            for (const auto& f : card.functions) {
                report.vm_functions.push_back(f.str());
            }
        }
    }
    if (report.vm_functions.empty()) {
        report.notes.push_back("container " + id + "'s config reaches no GPU card of this host");
    }
}

void journal_note(const ExplainInput& in, Report& report)
{
    const apply::Journal journal(in.fs);
    const auto configuring = apply::newest_configuring(apply::active_generations(journal.load_all()));
    if (!configuring) {
        report.notes.push_back("passthru has applied no changes on this host (no active generation in its journal)");
        return;
    }
    const auto& newest = *configuring;
    std::string cards;
    for (const auto& g : newest.gpus) {
        cards += (cards.empty() ? "" : ", ") + g.slot;
    }
    report.notes.push_back("passthru's newest active generation is " + std::to_string(newest.id) + " (" + newest.created + ")"
                           + (cards.empty() ? std::string() : ", for the cards " + cards));
}

} // namespace

Report explain_start(const ExplainInput& in)
{
    Report report;
    report.vmid = in.vmid;
    const std::string id = std::to_string(in.vmid);
    if (in.fs.exists("/etc/pve/lxc/" + id + ".conf") && !in.fs.exists("/etc/pve/qemu-server/" + id + ".conf")) {
        report.guest = scan::GuestKind::container;
        read_ct_config(in, report);
    } else {
        read_vm_config(in, report);
    }
    journal_note(in, report);
    report.kernel_source = in.kernel.source;
    report.kernel_messages = in.kernel.messages.size();
    if (in.kernel.note) {
        report.notes.push_back(*in.kernel.note);
    }
    report.task = read_start_task(in.fs, in.vmid, report);
    if (report.unreadable_index_lines != 0) {
        report.notes.push_back(std::to_string(report.unreadable_index_lines) + " line(s) of " + std::string(k_task_dir)
                               + "/index, index.1 and active are no task entry and were skipped");
    }
    const HostFacts facts(in, report);
    if (!report.task || !report.task->failed) {
        report.verdict = Verdict::no_failure;
        // A container that started can still fail its users (a userspace of another version than the
        // module's): the kernel's messages about its cards say so.
        if (report.guest == scan::GuestKind::container && !report.vm_functions.empty()) {
            match_kernel_log(in, facts, report);
            report.verdict = report.causes.empty() ? Verdict::no_failure : Verdict::explained;
        }
        return report;
    }
    match_task_log(in, facts, report);
    match_kernel_log(in, facts, report);
    report.verdict = report.causes.empty() ? Verdict::unexplained : Verdict::explained;
    return report;
}

} // namespace passthru::explain
