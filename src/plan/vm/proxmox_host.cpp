// SPDX-License-Identifier: GPL-2.0-or-later
// The host facts the Proxmox VE backend (plan/vm/proxmox.cpp) reads: the
// selected cards as it names them, the VM config's path, whether the VM runs,
// the storages for its disks, and the NUMA node its vCPUs are pinned to.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/pve_config.hpp"
#include "format/pve_storage.hpp"
#include "plan/plan_detail.hpp"
#include "plan/vm/proxmox_detail.hpp"
#include "plan/vm/vm_detail.hpp"
#include "util/lex.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

using format::pve::PropertyString;
using format::pve::VmConfig;

namespace lex = util::lex;

// Disk keys whose volume tells which storage holds the VM's disks: (scsi|virtio|sata|ide)\d+.
bool is_disk_key(std::string_view key)
{
    for (const std::string_view bus : {"scsi", "virtio", "sata", "ide"}) {
        if (key.starts_with(bus)) {
            return lex::all_of(key.substr(bus.size()), lex::is_digit);
        }
    }
    return false;
}

} // namespace

std::string vm_conf_path(std::uint64_t vmid)
{
    return k_qemu_server_d.file(std::to_string(vmid) + ".conf");
}

Card card_of(const scan::Inventory& inventory, const scan::GpuCard& gpu, std::string name)
{
    Card c;
    c.card = &gpu;
    c.slot = util::to_lower(gpu.slot);
    for (const auto& fn : gpu.functions) {
        c.functions.push_back(util::to_lower(fn.str()));
    }
    c.fn0 = inventory.first_function(gpu);
    if (name.empty() && c.fn0 != nullptr) {
        name = c.fn0->device_name;
    }
    c.label = std::string(c.fn0 != nullptr && c.fn0->is_gpu_switch(inventory.vendors) ? "NVSwitch " : "GPU ") + c.slot
              + (name.empty() ? "" : " (" + name + ")");
    return c;
}

std::vector<Card> describe_cards(const PlanContext& ctx, const Plan& plan)
{
    std::vector<Card> cards;
    for (const auto* gpu : ctx.selected) {
        std::string name;
        for (const auto& sel : plan.gpus) {
            if (sel.slot == gpu->slot) {
                name = sel.name;
            }
        }
        cards.push_back(card_of(ctx.inventory, *gpu, name));
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

RunState vm_run_state(const scan::RuntimeState& host, std::uint64_t vmid, std::string& evidence)
{
    const std::string pidfile = "/run/qemu-server/" + std::to_string(vmid) + ".pid";
    const auto found = host.qemu_pid_files.find(std::to_string(vmid));
    if (found == host.qemu_pid_files.end()) {
        evidence = "no " + pidfile;
        return RunState::stopped;
    }
    const scan::QemuPidFile& file = found->second;
    if (!file.pid) {
        evidence = pidfile + " holds no pid";
        return RunState::stopped;
    }
    const std::string pid = std::to_string(*file.pid);
    if (!file.cmdline) {
        evidence = pidfile + " names pid " + pid + ", which /proc/" + pid + "/cmdline does not show";
        return host.live ? RunState::stopped : RunState::unknown_pidfile;
    }
    const std::vector<std::string>& args = *file.cmdline;
    const std::string suffix = "/qemu-server/" + std::to_string(vmid) + ".pid";
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] == "-pidfile" && args[i + 1].ends_with(suffix)) {
            evidence = "pid " + pid + " from " + pidfile + " is QEMU for this VM";
            return RunState::running;
        }
    }
    evidence = "pid " + pid + " from " + pidfile + " is not this VM's QEMU (stale pid file)";
    return RunState::stopped;
}

std::optional<std::string> images_storage(const scan::RuntimeState& host)
{
    return host.storage_cfg ? format::pve::first_images_storage(*host.storage_cfg) : std::nullopt;
}

std::optional<std::string> vm_disk_storage(const VmConfig& config)
{
    for (const auto& [key, value] : config.entries()) {
        if (!is_disk_key(key)) {
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

} // namespace passthru::plan::detail
