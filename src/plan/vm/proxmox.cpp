// SPDX-License-Identifier: GPL-2.0-or-later
// The Proxmox VE side of a plan: the VM config /etc/pve/qemu-server/<vmid>.conf
// (edited line by line), the cluster PCI mappings /etc/pve/mapping/pci.cfg,
// and the qm commands for what a file edit cannot do (create a VM, allocate
// an EFI vars disk). Rules: docs/facts.md: vm-config and pci-mapping.
#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "plan/common.hpp"
#include "format/pve_config.hpp"
#include "format/pve_mapping.hpp"
#include "plan/vm/internal.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

using format::pve::HostPci;
using format::pve::PropertyString;
using format::pve::VmConfig;

const std::regex k_q35(R"(^(q35|pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?)$)");
const std::regex k_conf_name(R"(^([1-9][0-9]{2,8})\.conf$)");
// Disk keys whose volume tells which storage holds the VM's disks.
const std::regex k_disk_key(R"(^(scsi|virtio|sata|ide)\d+$)");

// What the planner needs of one selected card.
struct Card
{
    const scan::GpuCard* card = nullptr;
    const scan::PciDevice* fn0 = nullptr;
    std::string slot;                   // "0000:01:00", lowercase
    std::vector<std::string> functions; // "0000:01:00.0", ...
    std::string label;                  // "GPU 0000:01:00 (TU102 ...)"
};

std::string vm_conf_path(std::uint64_t vmid)
{
    return std::string(k_qemu_server_dir) + "/" + std::to_string(vmid) + ".conf";
}

std::vector<Card> describe_cards(const PlanContext& ctx, const Plan& plan)
{
    std::vector<Card> cards;
    for (const auto* gpu : ctx.selected) {
        Card c;
        c.card = gpu;
        c.slot = util::to_lower(gpu->slot);
        for (const auto& fn : gpu->functions) {
            c.functions.push_back(util::to_lower(fn.str()));
        }
        if (!gpu->functions.empty()) {
            c.fn0 = ctx.inventory.find(gpu->functions.front());
        }
        std::string name;
        for (const auto& sel : plan.gpus) {
            if (sel.slot == gpu->slot) {
                name = sel.name;
            }
        }
        if (name.empty() && c.fn0 != nullptr) {
            name = c.fn0->device_name;
        }
        c.label = "GPU " + c.slot + (name.empty() ? "" : " (" + name + ")");
        cards.push_back(std::move(c));
    }
    return cards;
}

bool covers_card(const std::vector<std::string>& ids, const Card& card)
{
    for (const auto& id : ids) {
        for (const auto& fn : card.functions) {
            if (format::pve::hostpci_id_covers(id, fn)) {
                return true;
            }
        }
    }
    return false;
}

// Running the way qemu-server's vm_running_locally decides it: the pid file
// names a live process whose command line has "-pidfile <that file>".
// Under --root a pid file whose process the tree cannot show counts as
// running (fail closed): a copied tree cannot prove the VM stopped.
enum class RunState
{
    stopped,
    running,
    unknown_pidfile,
};

RunState vm_run_state(const util::HostFs& fs, std::uint64_t vmid, std::string& evidence)
{
    const std::string pidfile = "/run/qemu-server/" + std::to_string(vmid) + ".pid";
    if (!fs.exists(pidfile)) {
        evidence = "no " + pidfile;
        return RunState::stopped;
    }
    const auto text = fs.read_attr(pidfile);
    const auto pid = text ? util::parse_int(*text) : std::nullopt;
    if (!pid || *pid <= 0) {
        evidence = pidfile + " holds no pid";
        return RunState::stopped;
    }
    const std::string proc = "/proc/" + std::to_string(*pid) + "/cmdline";
    const auto cmdline = fs.read_file(proc);
    if (!cmdline) {
        evidence = pidfile + " names pid " + std::to_string(*pid) + ", which " + proc + " does not show";
        return fs.is_live() ? RunState::stopped : RunState::unknown_pidfile;
    }
    std::vector<std::string> args;
    std::string current;
    for (char ch : *cmdline) {
        if (ch == '\0') {
            args.push_back(current);
            current.clear();
        } else {
            current += ch;
        }
    }
    if (!current.empty()) {
        args.push_back(current);
    }
    const std::string suffix = "/qemu-server/" + std::to_string(vmid) + ".pid";
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] == "-pidfile" && args[i + 1].ends_with(suffix)) {
            evidence = "pid " + std::to_string(*pid) + " from " + pidfile + " is QEMU for this VM";
            return RunState::running;
        }
    }
    evidence = "pid " + std::to_string(*pid) + " from " + pidfile + " is not this VM's QEMU (stale pid file)";
    return RunState::stopped;
}

// The first storage in /etc/pve/storage.cfg that holds VM images.
std::optional<std::string> images_storage(const util::HostFs& fs)
{
    const auto text = fs.read_file("/etc/pve/storage.cfg");
    if (!text) {
        return std::nullopt;
    }
    static const std::regex header(R"(^([a-z0-9]+):\s*(\S+)\s*$)");
    static const std::regex content(R"(^\s+content\s+(\S+)\s*$)");
    std::optional<std::string> current;
    for (const auto& line : util::split_lines(*text)) {
        std::smatch m;
        if (std::regex_match(line, m, header)) {
            current = m[2].str();
        } else if (current && std::regex_match(line, m, content)) {
            for (const auto& c : util::split(m[1].str(), ",")) {
                if (c == "images") {
                    return current;
                }
            }
        } else if (util::trim(line).empty()) {
            current.reset();
        }
    }
    return std::nullopt;
}

// Storage of the VM's first disk ("local-lvm:vm-101-disk-0,..." -> "local-lvm").
std::optional<std::string> vm_disk_storage(const VmConfig& config)
{
    for (const auto& [key, value] : config.entries()) {
        if (!std::regex_match(key, k_disk_key)) {
            continue;
        }
        const PropertyString ps = PropertyString::parse(value);
        if (ps.get("media") == "cdrom") {
            continue;
        }
        auto vol = ps.get("");
        if (!vol) {
            vol = ps.get("file");
        }
        if (!vol || *vol == "none" || *vol == "cdrom") {
            continue;
        }
        const auto colon = vol->find(':');
        if (colon != std::string::npos && colon > 0 && vol->front() != '/') {
            return vol->substr(0, colon);
        }
    }
    return std::nullopt;
}

std::uint64_t vm_memory_mib(const VmConfig& config)
{
    if (const auto value = config.get("memory")) {
        const PropertyString ps = PropertyString::parse(*value);
        auto current = ps.get("");
        if (!current) {
            current = ps.get("current");
        }
        if (current) {
            if (auto n = util::parse_int(*current); n && *n > 0) {
                return static_cast<std::uint64_t>(*n);
            }
        }
    }
    return 512; // PVE's default (docs/facts.md: vm-config)
}

std::uint64_t hugepage_mib(std::string_view hugepages)
{
    return hugepages == "1024" ? 1024 : 2;
}

// Total VRAM of the cards from the GPU profiles; nullopt when a card has none.
std::optional<std::uint64_t> total_vram_mib(const PlanContext& ctx, const std::vector<Card>& cards)
{
    std::vector<std::string> ignored; // plan_host reports broken profiles already
    const auto profiles = load_gpu_profiles(ctx.data, ignored);
    std::uint64_t total = 0;
    for (const auto& card : cards) {
        if (card.fn0 == nullptr) {
            return std::nullopt;
        }
        const auto* profile = find_profile(profiles, card.fn0->vendor_device());
        if (profile == nullptr || !profile->vram_gib) {
            return std::nullopt;
        }
        total += static_cast<std::uint64_t>(std::llround(*profile->vram_gib * 1024.0));
    }
    return total;
}

std::uint64_t round_up(std::uint64_t value, std::uint64_t step)
{
    return (value + step - 1) / step * step;
}

// Guest memory advice for the cards (MiB), or nullopt without VRAM figures.
std::optional<std::uint64_t> memory_advice(const VmProfile& profile, std::optional<std::uint64_t> vram)
{
    if (!vram) {
        return std::nullopt;
    }
    const auto want = static_cast<std::uint64_t>(std::llround(static_cast<double>(*vram) * profile.ram_per_vram))
                      + profile.memory_base_mib;
    return round_up(std::max(profile.memory_min_mib, want), 1024);
}

// vCPU affinity: the CPUs of the NUMA node all cards sit on.
struct Affinity
{
    std::optional<std::string> cpulist;
    std::string note;
};

Affinity plan_affinity(const PlanContext& ctx, const std::vector<Card>& cards)
{
    Affinity a;
    const auto version = ctx.inventory.host.pve_version ? util::major_minor(*ctx.inventory.host.pve_version) : std::nullopt;
    if (!version) {
        a.note = "affinity not set: the Proxmox VE version is unknown (the option needs PVE 7.3 or later)";
        return a;
    }
    if (*version < std::make_pair(7, 3)) {
        a.note = "affinity not set: Proxmox VE " + *ctx.inventory.host.pve_version + " is older than 7.3";
        return a;
    }
    std::optional<int> node;
    for (const auto& card : cards) {
        if (!card.card->numa_node) {
            a.note = "affinity not set: the NUMA node of " + card.slot + " is unknown";
            return a;
        }
        if (node && *node != *card.card->numa_node) {
            a.note = "affinity not set: the GPUs sit on different NUMA nodes";
            return a;
        }
        node = card.card->numa_node;
    }
    const auto nodes = ctx.fs.list_dir("/sys/devices/system/node");
    if (!nodes) {
        a.note = "affinity not set: the NUMA topology is unknown (no /sys/devices/system/node)";
        return a;
    }
    int count = 0;
    {
        count = static_cast<int>(std::count_if(nodes->begin(), nodes->end(), [](const std::string& n) {
            return n.starts_with("node") && n.size() > 4 && n.find_first_not_of("0123456789", 4) == std::string::npos;
        }));
    }
    if (count < 2) {
        a.note = "affinity not set: the host has a single NUMA node";
        return a;
    }
    const std::string path = "/sys/devices/system/node/node" + std::to_string(*node) + "/cpulist";
    const auto cpulist = ctx.fs.read_attr(path);
    if (!cpulist || cpulist->empty() || !cpulist_count(*cpulist)) {
        a.note = "affinity not set: " + path + " is missing or unreadable";
        return a;
    }
    a.cpulist = *cpulist;
    a.note = "vCPUs pinned to NUMA node " + std::to_string(*node) + " (CPUs " + *cpulist + "), where the GPUs sit";
    return a;
}

std::string change_line(std::string_view key, const std::optional<std::string>& before, std::string_view after,
                        std::string_view why)
{
    return std::string(key) + ": " + (before ? *before : std::string("(unset)")) + " -> " + std::string(after) + " ("
           + std::string(why) + ")";
}

// Records `key: value` in the config when it differs, with its reason.
void set_key(VmConfig& config, std::vector<std::string>& reasons, std::string_view key, const std::string& value,
             std::string_view why)
{
    const auto before = config.get(key);
    if (before == value) {
        return;
    }
    config.set(key, value);
    reasons.push_back(change_line(key, before, value, why));
}

// hostpci keys in use (current config and [PENDING]).
std::set<int> used_hostpci(const VmConfig& config)
{
    std::set<int> used;
    auto note = [&](const std::string& key) {
        if (key.starts_with("hostpci") && key.size() > 7) {
            if (auto n = util::parse_int(key.substr(7)); n && *n >= 0 && *n < k_max_hostpci) {
                used.insert(static_cast<int>(*n));
            }
        }
    };
    for (const auto& [key, value] : config.entries()) {
        note(key);
    }
    for (const auto& key : config.pending_keys()) {
        note(key);
    }
    return used;
}

struct MappingContext
{
    std::optional<std::string> node;
    std::optional<format::pve::PciMappingFile> file;
    std::optional<std::string> before;
};

// Refuses when another VM config of this node already uses a selected card
// (by a hostpci id PVE would prefix-match, or by a mapping whose entry for
// this node covers it). Only the current config and [PENDING] count:
// snapshots are not started.
void check_other_vms(const PlanContext& ctx, std::uint64_t vmid, const std::vector<Card>& cards,
                     const MappingContext& mctx, Plan& plan)
{
    auto names = ctx.fs.list_dir(k_qemu_server_dir);
    if (!names) {
        return;
    }
    std::sort(names->begin(), names->end());
    const format::pve::PciMappingFile* mappings = mctx.file ? &*mctx.file : nullptr;
    for (const auto& name : *names) {
        std::smatch m;
        if (!std::regex_match(name, m, k_conf_name) || m[1].str() == std::to_string(vmid)) {
            continue;
        }
        const std::string path = std::string(k_qemu_server_dir) + "/" + name;
        const auto text = ctx.fs.read_file(path);
        if (!text) {
            plan.refusals.push_back({"cannot read " + path + " to check which GPUs it uses: " + text.error().what(), {}});
            continue;
        }
        const VmConfig other = VmConfig::parse(*text);
        for (const std::string_view section : {std::string_view(""), std::string_view("PENDING")}) {
            for (const auto& [key, value, ids] : format::pve::passed_ids(other, section, mappings, mctx.node)) {
                for (const auto& card : cards) {
                    if (covers_card(ids, card)) {
                        plan.refusals.push_back(
                            {card.label + " is already given to VM " + m[1].str() + " (" + path + ": " + key + ": " + value
                                 + (section.empty() ? "" : ", in [PENDING]") + ")",
                             {"remove it there first (qm set " + m[1].str() + " --delete " + key
                              + "), or pick other GPUs with --gpus"}});
                    }
                }
            }
        }
    }
}

// Config lines for one card: reuse the entry that already names it, else
// the lowest free hostpciN.
struct CardSlot
{
    std::string key;
    std::optional<std::string> before;
    PropertyString value;
};

} // namespace

std::string mapping_id_for(std::string_view name, std::size_t index)
{
    return index == 0 ? std::string(name) : std::string(name) + "-" + std::to_string(index);
}

std::optional<int> cpulist_count(std::string_view cpulist)
{
    int count = 0;
    for (const auto& part : util::split(cpulist, ",")) {
        const auto dash = part.find('-');
        if (dash == std::string::npos) {
            if (!util::parse_int(part)) {
                return std::nullopt;
            }
            ++count;
            continue;
        }
        const auto lo = util::parse_int(part.substr(0, dash));
        const auto hi = util::parse_int(part.substr(dash + 1));
        if (!lo || !hi || *lo < 0 || *hi < *lo) {
            return std::nullopt;
        }
        count += static_cast<int>(*hi - *lo + 1);
    }
    return count > 0 ? std::optional<int>(count) : std::nullopt;
}

std::optional<std::string> pve_node_name(const util::HostFs& fs)
{
    const auto text = fs.read_attr("/etc/hostname");
    return text ? format::pve::node_name_from_hostname(*text) : std::nullopt;
}

void plan_proxmox_vm(const PlanContext& ctx, const VmProfile& profile, Plan& plan)
{
    const auto vmid = ctx.request.vmid;
    if (!vmid || *vmid < k_min_vmid || *vmid > k_max_vmid) {
        plan.refusals.push_back({"VMID " + ctx.request.vm + " is outside 100-999999999 (Proxmox VE's VMID range)",
                                 {"pick a VMID from 100 to 999999999, e.g. pvesh get /cluster/nextid"}});
        return;
    }
    const std::string id = std::to_string(*vmid);
    const std::vector<Card> cards = describe_cards(ctx, plan);
    if (cards.empty()) {
        plan.warnings.push_back("no GPU selected: VM " + id + " is not changed");
        return;
    }
    // A card whose group holds another GPU must travel with it (make_plan's
    // group check ensures that; checked again because PVE binds whole groups).
    for (const auto& card : cards) {
        for (const auto& other : card.card->shares_with) {
            const bool selected = std::any_of(cards.begin(), cards.end(), [&](const Card& c) {
                return other.slot() == c.card->slot;
            });
            if (!selected) {
                plan.refusals.push_back({card.label + " shares its IOMMU group with " + other.str()
                                             + ", which is not selected; Proxmox VE binds the whole group at VM start",
                                         {"select both cards"}});
            }
        }
    }

    if (ctx.fs.exists("/etc/pve/lxc/" + id + ".conf")) {
        plan.refusals.push_back({"VMID " + id + " belongs to a container (/etc/pve/lxc/" + id + ".conf)",
                                 {"pick a free VMID (pvesh get /cluster/nextid)"}});
        return;
    }

    const std::string conf_path = vm_conf_path(*vmid);
    const auto refusals_before = plan.refusals.size();
    const bool exists = ctx.fs.exists(conf_path);
    std::optional<std::string> before;
    if (exists) {
        before = read_current(ctx, plan, conf_path);
        if (!before) {
            return; // refused by read_current
        }
    } else if (const auto vmlist = ctx.fs.read_file("/etc/pve/.vmlist")) {
        // The cluster-wide VMID list: a VM of another node has no file here.
        try {
            const auto j = nlohmann::json::parse(*vmlist);
            if (j.contains("ids") && j["ids"].contains(id)) {
                const std::string node = j["ids"][id].value("node", std::string("another node"));
                plan.refusals.push_back({"VMID " + id + " is already used on cluster node " + node,
                                         {"run passthru on " + node + ", or pick a free VMID"}});
                return;
            }
        } catch (const nlohmann::json::exception&) {
            plan.warnings.push_back("/etc/pve/.vmlist is not valid JSON: cannot check the VMID across the cluster");
        }
    }

    VmConfig config = VmConfig::parse(before.value_or(""));
    if (exists) {
        if (const auto lock = config.get("lock")) {
            plan.refusals.push_back({"VM " + id + " is locked (lock: " + *lock + ")",
                                     {"wait for the " + *lock + " to finish; if the lock is stale: qm unlock " + id}});
        }
        std::string evidence;
        switch (vm_run_state(ctx.fs, *vmid, evidence)) {
        case RunState::running:
            plan.refusals.push_back({"VM " + id + " is running (" + evidence + ")", {"shut it down first: qm shutdown " + id}});
            break;
        case RunState::unknown_pidfile:
            plan.refusals.push_back({"VM " + id + " may be running: " + evidence,
                                     {"under --root a pid file counts as running; remove the stale pid file from the tree"}});
            break;
        case RunState::stopped:
            break;
        }
    }

    MappingContext mctx;
    mctx.node = pve_node_name(ctx.fs);
    if (ctx.fs.exists(k_pci_mapping_file)) {
        mctx.before = read_current(ctx, plan, k_pci_mapping_file);
        if (mctx.before) {
            mctx.file = format::pve::PciMappingFile::parse(*mctx.before);
        }
    }
    if (ctx.request.mapping) {
        if (!format::pve::valid_config_id(*ctx.request.mapping) || !format::pve::valid_config_id(mapping_id_for(*ctx.request.mapping, cards.size()))) {
            throw Error(Errc::usage, "--mapping: '" + *ctx.request.mapping + "' is not a valid mapping id")
                .with_hint("a letter, then letters, digits, '-' or '_' (at least 2 characters)");
        }
        if (!mctx.node) {
            plan.refusals.push_back({"cannot tell this node's name (/etc/hostname is missing or empty): a mapping needs it", {}});
        }
    }
    check_other_vms(ctx, *vmid, cards, mctx, plan);
    if (plan.refusals.size() != refusals_before) {
        return;
    }

    // Keys [PENDING] sets or deletes win at the next start (qemu-server
    // applies pending changes then): refuse rather than plan a change that
    // would be overridden.
    const auto pending = config.pending_keys();
    auto pending_has = [&](std::string_view key) { return std::find(pending.begin(), pending.end(), key) != pending.end(); };

    // 1. hostpciN per card.
    std::vector<std::string> reasons;
    std::set<int> used = used_hostpci(config);
    std::vector<CardSlot> slots;
    std::set<std::string> claimed;
    for (std::size_t k = 0; k < cards.size(); ++k) {
        const Card& card = cards[k];
        const std::optional<std::string> map_id =
            ctx.request.mapping ? std::optional<std::string>(mapping_id_for(*ctx.request.mapping, k)) : std::nullopt;
        CardSlot slot;
        for (const auto& [key, value, ids] : format::pve::passed_ids(config, "", mctx.file ? &*mctx.file : nullptr, mctx.node)) {
            if (claimed.count(key) != 0U || !covers_card(ids, card)) {
                continue;
            }
            const HostPci hp = HostPci::parse(value);
            // The entry must be about this card only.
            for (const auto& hid : hp.host_ids) {
                const bool own = std::any_of(card.functions.begin(), card.functions.end(),
                                             [&](const std::string& fn) { return format::pve::hostpci_id_covers(hid, fn); });
                if (!own) {
                    plan.refusals.push_back({key + " of VM " + id + " (" + value + ") mixes " + card.label
                                                 + " with other devices; passthru does not split it",
                                             {"edit " + key + " by hand (qm set " + id + " --" + key + " ...)"}});
                    return;
                }
            }
            slot.key = key;
            slot.before = value;
            slot.value = hp.options;
            break;
        }
        if (slot.key.empty()) {
            int free = -1;
            for (int n = 0; n < k_max_hostpci; ++n) {
                if (used.count(n) == 0U) {
                    free = n;
                    break;
                }
            }
            if (free < 0) {
                plan.refusals.push_back({"VM " + id + " has no free hostpciN (hostpci0-hostpci15 are all in use) for "
                                             + card.label,
                                         {"remove an unused hostpci entry first"}});
                return;
            }
            used.insert(free);
            slot.key = "hostpci" + std::to_string(free);
        }
        claimed.insert(slot.key);
        if (pending_has(slot.key)) {
            plan.refusals.push_back({"VM " + id + " has a pending change of " + slot.key + " ([PENDING])",
                                     {"apply or revert the pending changes first (qm pending " + id + ")"}});
            return;
        }
        slot.value.remove("");
        slot.value.remove("host");
        slot.value.remove("mapping");
        if (map_id) {
            slot.value.set("mapping", *map_id);
        } else {
            // The function-less id: every function, one multifunction guest device.
            slot.value.parts.insert(slot.value.parts.begin(), {"", card.slot});
        }
        slot.value.set("pcie", "1");
        const std::string after = slot.value.str();
        if (slot.before != after) {
            config.set(slot.key, after);
            reasons.push_back(change_line(slot.key, slot.before, after,
                                          card.label + ", all " + std::to_string(card.functions.size())
                                              + " functions as one multifunction PCIe device"
                                              + (map_id ? " through mapping " + *map_id : "")));
        }
        slots.push_back(std::move(slot));
    }

    // 2. Mappings.
    if (ctx.request.mapping) {
        format::pve::PciMappingFile file = mctx.file ? *mctx.file : format::pve::PciMappingFile::parse("");
        std::vector<std::string> map_reasons;
        for (std::size_t k = 0; k < cards.size(); ++k) {
            const Card& card = cards[k];
            const std::string map_id = mapping_id_for(*ctx.request.mapping, k);
            if (card.fn0 == nullptr || !card.fn0->vendor || !card.fn0->device) {
                plan.refusals.push_back({"cannot map " + card.label + ": its vendor/device id is unknown", {}});
                return;
            }
            format::pve::MapEntry entry;
            entry.node = *mctx.node;
            entry.paths = {card.slot};
            entry.id = card.fn0->vendor_device();
            if (card.fn0->subsystem_vendor && card.fn0->subsystem_device) {
                entry.subsystem_id = util::hex(*card.fn0->subsystem_vendor, 4) + ":" + util::hex(*card.fn0->subsystem_device, 4);
            }
            entry.iommu_group = card.fn0->iommu_group;
            const auto* section = file.find(map_id);
            if (section == nullptr) {
                const std::string description = card.label.substr(4) + ", added by passthru";
                file.add_section(map_id, {entry}, description);
                map_reasons.push_back("new mapping " + map_id + ": " + entry.str());
                continue;
            }
            const format::pve::MapEntry* local = nullptr;
            for (const auto& map : section->maps) {
                if (map.node == entry.node) {
                    local = &map;
                    break;
                }
            }
            if (local == nullptr) {
                for (const auto& map : section->maps) {
                    if (map.id != entry.id) {
                        plan.warnings.push_back("mapping " + map_id + " maps node " + map.node + " to a " + map.id
                                                + " device, this node's card is " + entry.id
                                                + ": a VM moved between them sees a different GPU model");
                        break;
                    }
                }
                file.add_map(map_id, entry);
                map_reasons.push_back("mapping " + map_id + ": add node " + entry.node + ": " + entry.str());
                continue;
            }
            const bool same = std::any_of(local->paths.begin(), local->paths.end(),
                                          [&](const std::string& p) { return util::to_lower(p) == card.slot || util::to_lower(p) == card.functions.front(); });
            if (!same) {
                plan.refusals.push_back({"mapping " + map_id + " already maps node " + entry.node + " to "
                                             + util::join(local->paths, ";") + ", not " + card.slot,
                                         {"choose another --mapping name"}});
                return;
            }
            if (local->paths.size() == 1 && local->paths.front() == card.functions.front() && card.functions.size() > 1) {
                plan.warnings.push_back("mapping " + map_id + " names only function 0 (" + local->paths.front()
                                        + "): the other functions of " + card.label + " stay on the host side");
            }
            plan.notes.push_back("mapping " + map_id + " already maps " + card.slot + " on node " + entry.node);
        }
        const std::string after = file.str();
        if (!mctx.before || *mctx.before != after) {
            stage_file(ctx, plan, k_pci_mapping_file, after, map_reasons);
            for (auto& f : plan.files) {
                if (f.path == k_pci_mapping_file && f.action == FileAction::create) {
                    f.mode = 0640; // pmxcfs shows every file as root:www-data 0640
                }
            }
        }
    }

    if (!exists) {
        // 3a. A new VM: one qm create with everything, so PVE allocates the
        // disks and checks the VMID cluster-wide itself.
        const auto storage = images_storage(ctx.fs);
        const auto vram = total_vram_mib(ctx, cards);
        std::uint64_t memory = profile.create_memory_mib;
        if (const auto advice = memory_advice(profile, vram); advice && *advice > memory) {
            memory = *advice;
        }
        if (ctx.inventory.host.mem_total_kib) {
            const std::uint64_t host_mib = *ctx.inventory.host.mem_total_kib / 1024;
            const std::uint64_t reserve = std::max<std::uint64_t>(4096, host_mib / 8);
            if (memory + reserve > host_mib) {
                const std::uint64_t capped = host_mib > reserve + 1024 ? round_up(host_mib - reserve, 1024) - 1024 : 1024;
                plan.warnings.push_back("VM " + id + " gets " + std::to_string(capped) + " MiB instead of "
                                        + std::to_string(memory) + " MiB: the host has " + std::to_string(host_mib)
                                        + " MiB and passthrough pins all guest memory");
                memory = capped;
            }
        }
        std::vector<std::string> argv{"qm", "create", id, "--name", "gpu-" + id, "--ostype", profile.ostype,
                                      "--machine", profile.machine, "--bios", profile.bios};
        PropertyString cpu;
        cpu.parts.emplace_back("", profile.cpu_type);
        if (!profile.cpu_flags.empty()) {
            cpu.set("flags", util::join(profile.cpu_flags, ";"));
        }
        if (profile.cpu_hidden) {
            cpu.set("hidden", "1");
        }
        if (profile.hv_vendor_id) {
            cpu.set("hv-vendor-id", *profile.hv_vendor_id);
        }
        argv.insert(argv.end(), {"--cpu", cpu.str(), "--cores", std::to_string(profile.create_cores), "--sockets",
                                 std::to_string(profile.create_sockets)});
        if (profile.numa) {
            argv.insert(argv.end(), {"--numa", "1"});
        }
        if (profile.hugepages) {
            const auto page = hugepage_mib(*profile.hugepages);
            memory = round_up(memory, page);
        }
        argv.insert(argv.end(), {"--memory", std::to_string(memory)});
        if (profile.balloon) {
            argv.insert(argv.end(), {"--balloon", std::to_string(*profile.balloon)});
        }
        if (profile.hugepages) {
            argv.insert(argv.end(), {"--hugepages", *profile.hugepages});
        }
        if (profile.affinity) {
            const Affinity aff = plan_affinity(ctx, cards);
            if (aff.cpulist) {
                argv.insert(argv.end(), {"--affinity", *aff.cpulist});
            }
            plan.notes.push_back("VM " + id + ": " + aff.note);
        }
        argv.insert(argv.end(), {"--scsihw", profile.create_scsihw, "--net0", profile.create_net0});
        if (storage) {
            argv.insert(argv.end(), {"--scsi0", *storage + ":" + std::to_string(profile.create_disk_gib)
                                                    + (profile.create_disk_options.empty() ? "" : "," + profile.create_disk_options)});
            if (profile.bios == "ovmf") {
                argv.insert(argv.end(), {"--efidisk0", *storage + ":1,efitype=" + profile.efitype + ",pre-enrolled-keys="
                                                           + (profile.pre_enrolled_keys ? "1" : "0")});
            }
            if (profile.create_tpmstate) {
                argv.insert(argv.end(), {"--tpmstate0", *storage + ":1,version=v2.0"});
            }
        } else {
            plan.warnings.push_back("no storage for VM images found in /etc/pve/storage.cfg: VM " + id
                                    + " is created without a disk and without an EFI vars disk");
        }
        for (const auto& slot : slots) {
            argv.insert(argv.end(), {"--" + slot.key, slot.value.str()});
        }
        plan.commands.push_back({argv, "create VM " + id + " (profile " + profile.name + ") with "
                                           + std::to_string(cards.size()) + " GPU(s); qm create checks the VMID cluster-wide"});
        if (!vram) {
            plan.notes.push_back("no VRAM figure in the GPU profiles for every card: memory " + std::to_string(memory)
                                 + " MiB comes from the VM profile");
        }
        return;
    }

    // 3b. An existing VM: edit its config in place.
    auto guard_pending = [&](std::string_view key) {
        if (pending_has(key)) {
            plan.refusals.push_back({"VM " + id + " has a pending change of " + std::string(key) + " ([PENDING])",
                                     {"apply or revert the pending changes first (qm pending " + id + ")"}});
            return false;
        }
        return true;
    };

    // machine: q35 keeps any sub-options (viommu=...).
    {
        const auto current = config.get("machine");
        PropertyString machine = PropertyString::parse(current.value_or(""));
        auto type = machine.get("");
        if (!type) {
            type = machine.get("type");
        }
        if (!type || !std::regex_match(*type, k_q35)) {
            if (!guard_pending("machine")) {
                return;
            }
            machine.remove("type");
            machine.remove("");
            machine.parts.insert(machine.parts.begin(), {"", profile.machine});
            set_key(config, reasons, "machine", machine.str(), "pcie=1 needs the q35 machine");
            plan.warnings.push_back("VM " + id + " moves from " + type.value_or("i440fx (default)")
                                    + " to q35: the guest sees a new chipset; Windows may need to re-detect devices");
        }
    }
    // bios + efidisk0
    {
        const auto current = config.get("bios").value_or("seabios");
        if (current != profile.bios) {
            if (!guard_pending("bios")) {
                return;
            }
            set_key(config, reasons, "bios", profile.bios, "UEFI firmware, the most compatible setup for GPU passthrough");
            if (profile.bios == "ovmf") {
                plan.warnings.push_back("VM " + id + " switches from SeaBIOS to OVMF (UEFI): a guest installed in BIOS/MBR "
                                        "mode will not boot until it is converted to UEFI/GPT");
            }
        }
        if (profile.bios == "ovmf" && !config.get("efidisk0")) {
            const auto storage = vm_disk_storage(config) ? vm_disk_storage(config) : images_storage(ctx.fs);
            if (storage) {
                plan.commands.push_back({{"qm", "set", id, "--efidisk0",
                                          *storage + ":1,efitype=" + profile.efitype
                                              + ",pre-enrolled-keys=" + (profile.pre_enrolled_keys ? "1" : "0")},
                                         "VM " + id + " has no efidisk0: OVMF would keep its settings in a temporary "
                                         "EFI vars disk and forget boot entries at every start"});
            } else {
                plan.warnings.push_back("VM " + id + " has no efidisk0 and no storage for one was found: OVMF uses a "
                                        "temporary EFI vars disk; add one with qm set " + id + " --efidisk0 STORAGE:1,efitype=4m");
            }
        }
    }
    // cpu
    {
        const auto current = config.get("cpu");
        PropertyString cpu = PropertyString::parse(current.value_or(""));
        auto type = cpu.get("");
        if (!type) {
            type = cpu.get("cputype");
            cpu.remove("cputype");
        }
        cpu.remove("");
        cpu.parts.insert(cpu.parts.begin(), {"", profile.cpu_type});
        std::vector<std::string> flags = util::split(cpu.get("flags").value_or(""), ";");
        const auto& allowed = vm_cpu_flag_allow_list();
        for (const auto& flag : flags) {
            if (flag.size() < 2 || std::find(allowed.begin(), allowed.end(), flag.substr(1)) == allowed.end()) {
                plan.warnings.push_back("VM " + id + ": cpu flag " + flag + " is not allowed in a VM config; PVE ignores "
                                        "the whole cpu line (kept as it is)");
            }
        }
        for (const auto& flag : profile.cpu_flags) {
            const auto same_name = std::find_if(flags.begin(), flags.end(), [&](const std::string& f) { return f.substr(1) == flag.substr(1); });
            if (same_name == flags.end()) {
                flags.push_back(flag);
            }
        }
        if (!flags.empty()) {
            cpu.set("flags", util::join(flags, ";"));
        }
        if (profile.cpu_hidden && format::pve::parse_boolean(cpu.get("hidden").value_or("0")) != true) {
            cpu.set("hidden", "1");
        }
        if (profile.hv_vendor_id && !cpu.get("hv-vendor-id")) {
            cpu.set("hv-vendor-id", *profile.hv_vendor_id);
        }
        if (current != cpu.str()) {
            if (!guard_pending("cpu")) {
                return;
            }
            set_key(config, reasons, "cpu", cpu.str(),
                    profile.cpu_hidden ? "host CPU model; hidden=1 and hv-vendor-id for NVIDIA drivers before R465 (Code 43)"
                                       : "the host CPU model: full instruction set for CUDA and data loading");
        }
    }
    // numa, affinity, balloon, hugepages, memory advice
    if (profile.numa && format::pve::parse_boolean(config.get("numa").value_or("0")) != true) {
        if (!guard_pending("numa")) {
            return;
        }
        set_key(config, reasons, "numa", "1", "guest NUMA topology; hugepages need it");
    }
    if (profile.affinity) {
        const Affinity aff = plan_affinity(ctx, cards);
        if (aff.cpulist) {
            if (const auto current = config.get("affinity"); current && *current != *aff.cpulist) {
                plan.notes.push_back("VM " + id + " keeps its affinity " + *current + " (the GPUs' node has CPUs "
                                     + *aff.cpulist + ")");
            } else if (!current) {
                if (!guard_pending("affinity")) {
                    return;
                }
                set_key(config, reasons, "affinity", *aff.cpulist, aff.note);
                const int vcpus = static_cast<int>(util::parse_int(config.get("cores").value_or("1")).value_or(1)
                                                   * util::parse_int(config.get("sockets").value_or("1")).value_or(1));
                if (const auto n = cpulist_count(*aff.cpulist); n && vcpus > *n) {
                    plan.warnings.push_back("VM " + id + " has " + std::to_string(vcpus) + " vCPUs but the GPUs' NUMA node has "
                                            + std::to_string(*n) + " CPUs");
                }
            }
        } else {
            plan.notes.push_back("VM " + id + ": " + aff.note);
        }
    }
    if (profile.balloon) {
        const auto current = config.get("balloon");
        if (current != std::to_string(*profile.balloon)) {
            if (!guard_pending("balloon")) {
                return;
            }
            set_key(config, reasons, "balloon", std::to_string(*profile.balloon),
                    "passthrough pins all guest memory, so the balloon cannot give any back");
        }
    }
    const std::uint64_t memory = vm_memory_mib(config);
    if (profile.hugepages && config.get("hugepages") != *profile.hugepages) {
        const auto page = hugepage_mib(*profile.hugepages);
        if (memory % page != 0 || memory % 2 != 0) {
            plan.warnings.push_back("hugepages not set: VM " + id + " has " + std::to_string(memory) + " MiB, not a multiple of the "
                                    + std::to_string(page) + " MiB page size");
        } else if (guard_pending("hugepages")) {
            set_key(config, reasons, "hugepages", *profile.hugepages, "huge pages back the guest memory (needs numa: 1)");
        } else {
            return;
        }
    }
    if (const auto advice = memory_advice(profile, total_vram_mib(ctx, cards)); advice && memory < *advice) {
        plan.warnings.push_back("VM " + id + " has " + std::to_string(memory) + " MiB of memory; for these GPUs the " + profile.name
                                + " profile advises at least " + std::to_string(*advice) + " MiB (qm set " + id + " --memory "
                                + std::to_string(*advice) + ")");
    }
    if (ctx.inventory.host.mem_total_kib && memory > *ctx.inventory.host.mem_total_kib / 1024) {
        plan.warnings.push_back("VM " + id + " has more memory (" + std::to_string(memory) + " MiB) than the host ("
                                + std::to_string(*ctx.inventory.host.mem_total_kib / 1024)
                                + " MiB); with passthrough all of it is pinned, so it will not start");
    }
    if (!config.section_names().empty()) {
        plan.notes.push_back("VM " + id + ": sections kept unchanged: [" + util::join(config.section_names(), "], [") + "]");
    }
    stage_file(ctx, plan, conf_path, config.str(), reasons);
}

} // namespace passthru::plan::detail
