// SPDX-License-Identifier: GPL-2.0-or-later
// The Proxmox VE side of a plan: the VM config /etc/pve/qemu-server/<vmid>.conf
// (edited line by line), the cluster PCI mappings /etc/pve/mapping/pci.cfg,
// and the qm commands for what a file edit cannot do (create a VM, allocate
// an EFI vars disk). Rules: docs/facts.md: vm-config and pci-mapping.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/pve_config.hpp"
#include "format/pve_mapping.hpp"
#include "format/pve_storage.hpp"
#include "plan/common.hpp"
#include "plan/vm/address_space.hpp"
#include "plan/vm/internal.hpp"
#include "plan/vm/proxmox_job.hpp"
#include "plan/vm/start_checks.hpp"
#include "util/json.hpp"
#include "util/lex.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

using format::pve::PropertyString;
using format::pve::VmConfig;

namespace lex = util::lex;

// A VM config's file name: VMID.conf with VMID in 100..999999999; the VMID.
std::optional<std::string_view> conf_name_vmid(std::string_view name)
{
    if (!name.ends_with(".conf")) {
        return std::nullopt;
    }
    name.remove_suffix(5);
    if (name.size() < 3 || name.size() > 9 || name.front() == '0' || !lex::all_of(name, lex::is_digit)) {
        return std::nullopt;
    }
    return name;
}

} // namespace

std::string change_line(std::string_view key, const std::optional<std::string>& before, std::string_view after, std::string_view why)
{
    return std::string(key) + ": " + (before ? *before : std::string("(unset)")) + " -> " + std::string(after) + " (" + std::string(why)
           + ")";
}

void set_key(VmConfig& config, std::vector<std::string>& reasons, std::string_view key, const std::string& value, std::string_view why)
{
    const auto before = config.get(key);
    if (before == value) {
        return;
    }
    config.set(key, value);
    reasons.push_back(change_line(key, before, value, why));
}

namespace {

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
        const auto id = conf_name_vmid(name);
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

// --- values both paths build -------------------------------------------------

// The profile's cpu on top of CURRENT: its model, its flags added to those
// set (a flag of the same name kept as it is), hidden and hv-vendor-id.
// BAD_FLAGS gets the flags PVE would not accept in a VM config.
PropertyString wanted_cpu(const std::optional<std::string>& current, const VmProfile& profile, std::vector<std::string>& bad_flags)
{
    PropertyString cpu = PropertyString::parse(current.value_or(""));
    if (!cpu.get("")) {
        cpu.remove("cputype");
    }
    cpu.remove("");
    cpu.parts.insert(cpu.parts.begin(), {"", profile.cpu_type});
    std::vector<std::string> flags = util::split(cpu.get("flags").value_or(""), ";");
    const auto& allowed = vm_cpu_flag_allow_list();
    for (const auto& flag : flags) {
        if (flag.size() < 2 || std::find(allowed.begin(), allowed.end(), flag.substr(1)) == allowed.end()) {
            bad_flags.push_back(flag);
        }
    }
    for (const auto& flag : profile.cpu_flags) {
        const auto same_name =
            std::find_if(flags.begin(), flags.end(), [&](const std::string& f) { return f.substr(1) == flag.substr(1); });
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
    return cpu;
}

// The efidisk0 volume to allocate on STORAGE.
std::string efidisk_volume(const std::string& storage, const VmProfile& profile)
{
    return storage + ":1,efitype=" + profile.efitype + ",pre-enrolled-keys=" + (profile.pre_enrolled_keys ? "1" : "0");
}

// --- the create path: one qm create ----------------------------------------

// The disks of a new VM on the first storage for images: system disk, EFI
// vars, TPM state.
void add_new_vm_disks(VmJob& job, std::vector<std::string>& argv)
{
    const VmProfile& profile = job.profile;
    const auto storage = images_storage(job.ctx.inventory.runtime);
    if (!storage) {
        job.plan.warnings.push_back("no storage for VM images found in /etc/pve/storage.cfg: VM " + job.id
                                    + " is created without a disk and without an EFI vars disk");
        return;
    }
    argv.insert(argv.end(), {"--scsi0", *storage + ":" + std::to_string(profile.create_disk_gib)
                                            + (profile.create_disk_options.empty() ? "" : "," + profile.create_disk_options)});
    if (profile.bios == "ovmf") {
        argv.insert(argv.end(), {"--efidisk0", efidisk_volume(*storage, profile)});
    }
    if (profile.create_tpmstate) {
        argv.insert(argv.end(), {"--tpmstate0", *storage + ":1,version=v2.0"});
    }
}

// What qemu-server would refuse at qm start, for the config as planned; true when refused.
bool refuse_start_failures(VmJob& job, const VmConfig& planned)
{
    const StartContext sctx{job.ctx.inventory, job.mctx.file ? &*job.mctx.file : nullptr, job.mctx.node, job.id};
    auto refusals = start_refusals(sctx, planned);
    job.plan.refusals.insert(job.plan.refusals.end(), refusals.begin(), refusals.end());
    return !refusals.empty();
}

} // namespace

void plan_qm_create(VmJob& job)
{
    const VmProfile& profile = job.profile;
    const std::string& id = job.id;
    const auto vram = total_vram_mib(job.ctx, job.cards);
    std::uint64_t memory = new_vm_memory(job, vram);
    std::vector<std::string> argv =
        qm_create_argv(id, {"--name", "gpu-" + id, "--ostype", profile.ostype, "--machine", profile.machine, "--bios", profile.bios});
    std::vector<std::string> bad_flags; // none: a new VM has no flags of its own
    const AddressDecision cpu = job.check_address_space(wanted_cpu(std::nullopt, profile, bad_flags), std::nullopt, memory);
    if (cpu.reason) {
        job.plan.notes.push_back("VM " + id + ": cpu " + cpu.cpu.str() + ": " + *cpu.reason);
    }
    argv.insert(argv.end(), {"--cpu", cpu.cpu.str(), "--cores", std::to_string(new_vm_cores(job)), "--sockets",
                             std::to_string(profile.create_sockets)});
    if (profile.numa) {
        argv.insert(argv.end(), {"--numa", "1"});
    }
    argv.insert(argv.end(), {"--memory", std::to_string(memory)});
    if (profile.balloon) {
        argv.insert(argv.end(), {"--balloon", std::to_string(*profile.balloon)});
    }
    if (profile.hugepages) {
        argv.insert(argv.end(), {"--hugepages", *profile.hugepages});
    }
    if (profile.affinity) {
        const Affinity aff = plan_affinity(job.ctx, job.cards);
        if (aff.cpulist) {
            argv.insert(argv.end(), {"--affinity", *aff.cpulist});
        }
        job.plan.notes.push_back("VM " + id + ": " + aff.note);
    }
    argv.insert(argv.end(), {"--scsihw", profile.create_scsihw, "--net0", profile.create_net0});
    add_new_vm_disks(job, argv);
    for (const auto& slot : job.slots) {
        argv.insert(argv.end(), {"--" + slot.key, slot.value.str()});
    }
    if (refuse_start_failures(job, config_of_create(argv))) {
        return;
    }
    job.plan.commands.push_back({argv, "create VM " + id + " (profile " + profile.name + ") with " + std::to_string(job.cards.size())
                                           + " GPU(s); qm create checks the VMID cluster-wide"});
    if (!vram) {
        job.plan.notes.push_back("no VRAM figure in the GPU profiles for every card: memory " + std::to_string(memory)
                                 + " MiB comes from the VM profile");
    }
}

namespace {

// --- the edit path: the config edited in place ---------------------------------
// Each step returns false when it refused (the plan stops there).

// machine: q35 (pcie=1 needs it), keeping any sub-options (viommu=...).
bool edit_machine(VmJob& job)
{
    PropertyString machine = PropertyString::parse(job.config.get("machine").value_or(""));
    auto type = machine.get("");
    if (!type) {
        type = machine.get("type");
    }
    if (type && format::pve::valid_q35_machine(*type)) {
        return true;
    }
    if (!job.guard_pending("machine")) {
        return false;
    }
    machine.remove("type");
    machine.remove("");
    machine.parts.insert(machine.parts.begin(), {"", job.profile.machine});
    set_key(job.config, job.reasons, "machine", machine.str(), "pcie=1 needs the q35 machine");
    job.plan.warnings.push_back("VM " + job.id + " moves from " + type.value_or("i440fx (default)")
                                + " to q35: the guest sees a new chipset; Windows may need to re-detect devices");
    return true;
}

// bios, and for OVMF an efidisk0 on the storage of the VM's disks.
bool edit_bios(VmJob& job)
{
    const VmProfile& profile = job.profile;
    const std::string& id = job.id;
    if (job.config.get("bios").value_or("seabios") != profile.bios) {
        if (!job.guard_pending("bios")) {
            return false;
        }
        set_key(job.config, job.reasons, "bios", profile.bios, "UEFI firmware, the most compatible setup for GPU passthrough");
        if (profile.bios == "ovmf") {
            job.plan.warnings.push_back("VM " + id
                                        + " switches from SeaBIOS to OVMF (UEFI): a guest installed in BIOS/MBR "
                                          "mode will not boot until it is converted to UEFI/GPT");
        }
    }
    if (profile.bios != "ovmf" || job.config.get("efidisk0")) {
        return true;
    }
    const auto storage = vm_disk_storage(job.config) ? vm_disk_storage(job.config) : images_storage(job.ctx.inventory.runtime);
    if (storage) {
        job.plan.commands.push_back({qm_set_efidisk_argv(id, efidisk_volume(*storage, profile)),
                                     "VM " + id
                                         + " has no efidisk0: OVMF would keep its settings in a temporary "
                                           "EFI vars disk and forget boot entries at every start"});
    } else {
        job.plan.warnings.push_back("VM " + id
                                    + " has no efidisk0 and no storage for one was found: OVMF uses a "
                                      "temporary EFI vars disk; add one with qm set "
                                    + id + " --efidisk0 STORAGE:1,efitype=4m");
    }
    return true;
}

// cpu: the profile's model and flags on top of what the VM has.
bool edit_cpu(VmJob& job)
{
    const auto current = job.config.get("cpu");
    std::vector<std::string> bad_flags;
    const auto current_cpu = current ? std::optional<PropertyString>(PropertyString::parse(*current)) : std::nullopt;
    const AddressDecision decision = job.check_address_space(wanted_cpu(current, job.profile, bad_flags),
                                                             current_cpu.value_or(PropertyString{}), vm_memory_mib(job.config));
    const PropertyString& cpu = decision.cpu;
    for (const auto& flag : bad_flags) {
        job.plan.warnings.push_back("VM " + job.id + ": cpu flag " + flag
                                    + " is not allowed in a VM config; PVE ignores "
                                      "the whole cpu line (kept as it is)");
    }
    if (current == cpu.str()) {
        return true;
    }
    if (!job.guard_pending("cpu")) {
        return false;
    }
    std::string why = job.profile.cpu_type != "host" ? "the CPU model of profile " + job.profile.name
                      : job.profile.cpu_hidden       ? "host CPU model; hidden=1 and hv-vendor-id for NVIDIA drivers before R465 (Code 43)"
                                                     : "the host CPU model: full instruction set for CUDA and data loading";
    if (decision.reason) {
        why += "; " + *decision.reason;
    }
    set_key(job.config, job.reasons, "cpu", cpu.str(), why);
    return true;
}

} // namespace

void plan_config_edit(VmJob& job)
{
    if (!edit_machine(job) || !edit_bios(job) || !edit_cpu(job) || !edit_numa_affinity(job) || !edit_memory(job)
        || refuse_start_failures(job, job.config)) {
        return;
    }
    if (!job.config.section_names().empty()) {
        job.plan.notes.push_back("VM " + job.id + ": sections kept unchanged: [" + util::join(job.config.section_names(), "], [") + "]");
    }
    stage_file(job.ctx, job.plan, job.conf_path, job.config.str(), job.reasons);
}

void plan_proxmox_vm(const PlanContext& ctx, const VmProfile& profile, Plan& plan)
{
    VmJob job(ctx, profile, plan);
    auto limits = load_address_limits(ctx.data);
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
