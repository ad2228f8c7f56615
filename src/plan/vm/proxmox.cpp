// SPDX-License-Identifier: GPL-2.0-or-later
// The Proxmox VE side of a plan: the VM config /etc/pve/qemu-server/<vmid>.conf
// (edited line by line), the cluster PCI mappings /etc/pve/mapping/pci.cfg,
// and the qm commands for what a file edit cannot do (create a VM, allocate
// an EFI vars disk). Rules: docs/facts.md: vm-config and pci-mapping.
// This file holds plan_proxmox_vm, the job its steps share (proxmox_detail.hpp)
// and the refusals it checks before planning anything; the steps are in
// proxmox_host.cpp (host facts), proxmox_hostpci.cpp (hostpciN lines),
// proxmox_mapping.cpp (pci.cfg), proxmox_sizing.cpp (memory, vCPUs, huge
// pages) and proxmox_config.cpp (qm create or the config edit).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/pve_config.hpp"
#include "format/pve_mapping.hpp"
#include "plan/plan_detail.hpp"
#include "plan/vm/address_space.hpp"
#include "plan/vm/proxmox_detail.hpp"
#include "plan/vm/vm_detail.hpp"
#include "scan/card_users.hpp"
#include "util/json.hpp"
#include "util/lex.hpp"

namespace passthru::plan::detail {

namespace {

using format::pve::PropertyString;
using format::pve::VmConfig;

// Refuses when another VM config of this node already uses a selected card
// (by a hostpci id PVE would prefix-match, or by a mapping whose entry for
// this node covers it). Only the current config and [PENDING] count:
// snapshots are not started.
void check_other_vms(const PlanContext& ctx, std::uint64_t vmid, const std::vector<Card>& cards, const MappingContext& mctx, Plan& plan)
{
    auto names = ctx.fs.list_dir(k_qemu_server_d.dir);
    if (!names) {
        return;
    }
    std::sort(names->begin(), names->end());
    const format::pve::PciMappingFile* mappings = mctx.file ? &*mctx.file : nullptr;
    for (const auto& name : *names) {
        const auto id = scan::guest_conf_vmid(name);
        if (!id || *id == std::to_string(vmid)) {
            continue;
        }
        const std::string path = k_qemu_server_d.file(name);
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
                        plan.refusals.push_back({card.label + " is already given to VM " + std::string(*id) + " (" + path + ": " + key
                                                     + ": " + value + (section.empty() ? "" : ", in [PENDING]") + ")",
                                                 {"remove it there first (qm set " + std::string(*id) + " --delete " + key
                                                  + "), or pick other GPUs with --gpus"}});
                    }
                }
            }
        }
    }
}

} // namespace

AddressDecision VmJob::check_address_space(const PropertyString& planned, const std::optional<PropertyString>& current,
                                           std::uint64_t ram_mib)
{
    std::vector<const scan::GpuCard*> passed;
    passed.reserve(cards.size());
    for (const auto& c : cards) {
        passed.push_back(c.card);
    }
    AddressDecision d =
        plan_address_space(address_limits, ctx.inventory.host, planned, current, mmio64_needed(ctx.inventory, passed), ram_mib, id);
    plan.warnings.insert(plan.warnings.end(), d.warnings.begin(), d.warnings.end());
    const std::string bars = mmio64_explained(ctx.inventory, passed);
    if (d.host_limit) {
        plan.refusals.push_back({"VM " + id + ": " + *d.host_limit + " (" + bars + ")",
                                 {"pass fewer GPUs to this VM (--gpus), so their BARs fit the host's address bits",
                                  "or turn Resizable BAR off for the cards in the firmware setup, which shrinks their large BAR",
                                  "or use a host whose CPU has more physical address bits ('address sizes' in /proc/cpuinfo)"}});
    } else if (!d.computation.empty()) {
        plan.notes.push_back("VM " + id + ": guest address space for the GPUs' 64-bit BARs (" + bars + "): " + d.computation);
    }
    return d;
}

bool VmJob::guard_pending(std::string_view key)
{
    const auto pending = config.pending_keys();
    if (std::find(pending.begin(), pending.end(), key) == pending.end()) {
        return true;
    }
    plan.refusals.push_back({"VM " + id + " has a pending change of " + std::string(key) + " ([PENDING])",
                             {"apply or revert the pending changes first (qm pending " + id + ")"}});
    return false;
}

namespace {

// --- refusals --------------------------------------------------------------

// The VMID range and the selection; false when there is nothing to plan.
bool start_job(VmJob& job)
{
    const auto vmid = job.ctx.request.vmid;
    if (!vmid || *vmid < k_min_vmid || *vmid > k_max_vmid) {
        job.plan.refusals.push_back({"VMID " + job.ctx.request.vm + " is outside 100-999999999 (Proxmox VE's VMID range)",
                                     {"pick a VMID from 100 to 999999999, e.g. pvesh get /cluster/nextid"}});
        return false;
    }
    job.vmid = *vmid;
    job.id = std::to_string(*vmid);
    job.cards = describe_cards(job.ctx, job.plan);
    if (job.cards.empty()) {
        job.plan.warnings.push_back("no GPU selected: VM " + job.id + " is not changed");
        return false;
    }
    job.conf_path = vm_conf_path(*vmid);
    return true;
}

// A card whose group holds another GPU must travel with it (make_plan's group
// check ensures that; checked again because PVE binds whole groups).
void refuse_split_groups(VmJob& job)
{
    for (const auto& card : job.cards) {
        for (const auto& other : card.card->shares_with) {
            const bool selected =
                std::any_of(job.cards.begin(), job.cards.end(), [&](const Card& c) { return other.slot() == c.card->slot; });
            if (!selected) {
                job.plan.refusals.push_back({card.label + " shares its IOMMU group with " + other.str()
                                                 + ", which is not selected; Proxmox VE binds the whole group at VM start",
                                             {"select both cards"}});
            }
        }
    }
}

// A VM config that is missing only because its directory is: something at
// /etc/pve or /etc/pve/qemu-server that does not lead to a directory (a
// dangling symlink, a file) hides every VM, so "no such VM" would plan
// 'qm create' over one. False when refused.
bool refuse_unusable_vm_dir(VmJob& job)
{
    for (const auto& dir : {std::string("/etc/pve"), std::string(k_qemu_server_d.dir)}) {
        if (job.ctx.fs.stat(dir).type != util::FileType::missing && !job.ctx.fs.is_dir(dir)) {
            job.plan.refusals.push_back(
                {dir + " is not a directory (a dangling symlink or a file), so passthru cannot tell whether VM " + job.id + " exists",
                 {"repair " + dir + " (on Proxmox VE it is pmxcfs's), then plan again"}});
            return false;
        }
    }
    return true;
}

// A VMID that is not this node's VM: a container, or a VM of another node
// (the cluster-wide .vmlist). False when refused.
bool refuse_foreign_vmid(VmJob& job)
{
    const std::string& id = job.id;
    if (!job.exists && !refuse_unusable_vm_dir(job)) {
        return false;
    }
    if (job.ctx.fs.exists("/etc/pve/lxc/" + id + ".conf")) {
        job.plan.refusals.push_back(
            {"VMID " + id + " belongs to a container (/etc/pve/lxc/" + id + ".conf)", {"pick a free VMID (pvesh get /cluster/nextid)"}});
        return false;
    }
    if (job.exists) {
        return true;
    }
    const auto& vmlist = job.ctx.inventory.runtime.vmlist;
    if (!vmlist) {
        return true;
    }
    const auto parsed = util::parse_json(*vmlist, "/etc/pve/.vmlist");
    if (!parsed) {
        job.plan.warnings.push_back("/etc/pve/.vmlist is not valid JSON: cannot check the VMID across the cluster");
        return true;
    }
    try {
        const auto& j = *parsed;
        if (j.contains("ids") && j["ids"].contains(id)) {
            const std::string node = j["ids"][id].value("node", std::string("another node"));
            job.plan.refusals.push_back(
                {"VMID " + id + " is already used on cluster node " + node, {"run passthru on " + node + ", or pick a free VMID"}});
            return false;
        }
    } catch (const nlohmann::json::exception&) {
        job.plan.warnings.push_back("/etc/pve/.vmlist is not valid JSON: cannot check the VMID across the cluster");
    }
    return true;
}

// The VM's config when it exists; false when it cannot be read (refused).
bool read_vm_config(VmJob& job)
{
    if (job.exists) {
        job.before = read_current(job.ctx, job.plan, job.conf_path);
        if (!job.before) {
            return false; // refused by read_current
        }
    }
    job.config = VmConfig::parse(job.before.value_or(""));
    return true;
}

// An existing VM must be neither locked nor running.
void refuse_busy_vm(VmJob& job)
{
    if (!job.exists) {
        return;
    }
    const std::string& id = job.id;
    if (const auto lock = job.config.get("lock")) {
        job.plan.refusals.push_back({"VM " + id + " is locked (lock: " + *lock + ")",
                                     {"wait for the " + *lock + " to finish; if the lock is stale: qm unlock " + id}});
    }
    std::string evidence;
    switch (vm_run_state(job.ctx.inventory.runtime, job.vmid, evidence)) {
    case RunState::running:
        job.plan.refusals.push_back({"VM " + id + " is running (" + evidence + ")", {"shut it down first: qm shutdown " + id}});
        break;
    case RunState::unknown_pidfile:
        job.plan.refusals.push_back({"VM " + id + " may be running: " + evidence,
                                     {"under --root a pid file counts as running; remove the stale pid file from the tree"}});
        break;
    case RunState::stopped:
        break;
    }
}

} // namespace

void plan_proxmox_vm(const PlanContext& ctx, const VmProfile& profile, Plan& plan)
{
    VmJob job(ctx, profile, plan);
    auto limits = data::load_address_limits(ctx.data);
    if (!limits) {
        throw std::move(limits.error());
    }
    job.address_limits = std::move(*limits);
    if (!start_job(job)) {
        return;
    }
    refuse_split_groups(job);
    const auto refusals_before = plan.refusals.size();
    // Anything at the path counts, a dangling symlink too: read_vm_config refuses what is
    // not a regular file instead of planning 'qm create' over it.
    job.exists = ctx.fs.stat(job.conf_path).type != util::FileType::missing;
    if (!refuse_foreign_vmid(job) || !read_vm_config(job)) {
        return;
    }
    refuse_busy_vm(job);
    plan_romfiles(job);
    read_mappings(job);
    check_other_vms(ctx, job.vmid, job.cards, job.mctx, plan);
    if (plan.refusals.size() != refusals_before || !assign_slots(job) || !plan_mappings(job)) {
        return;
    }
    if (job.exists) {
        plan_config_edit(job);
    } else {
        plan_qm_create(job);
    }
}

} // namespace passthru::plan::detail
