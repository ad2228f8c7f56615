// SPDX-License-Identifier: GPL-2.0-or-later
// The VM config of the Proxmox VE backend (plan/vm/proxmox.cpp): for a new VM
// one qm create with everything, for an existing one
// /etc/pve/qemu-server/<vmid>.conf edited line by line (machine, bios and its
// EFI vars disk, cpu; the sizing lines are proxmox_sizing.cpp's), each checked
// against what qm start refuses. Rules: docs/facts.md: vm-config.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/pve_config.hpp"
#include "plan/plan_detail.hpp"
#include "plan/vm/address_space.hpp"
#include "plan/vm/proxmox_detail.hpp"
#include "plan/vm/start_checks.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

using format::pve::PropertyString;
using format::pve::VmConfig;

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
    const auto vram = total_vram_mib(job.cards);
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

} // namespace passthru::plan::detail
