// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <functional>

#include "scan/inventory.hpp"
#include "util/command_runner.hpp"
#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::scan {

// Reads the whole inventory of the host below fs.root(): PCI functions (sysfs
// through HostFs, names and capabilities through libpci pointed at
// <root>/sys/bus/pci), IOMMU groups, GPU cards with their isolation verdict,
// host facts, and the problems with their fixes. Missing or garbled
// attributes leave that field empty and add a warning; only a root without
// sysfs is an error (Errc::usage). Runs external commands only through
// runner.query() (live host: proxmox-boot-tool status). `data` holds the
// kernel versions from profiles/host/kernel.json (data::load_kernel_cutoffs) and
// the GPU vendors of profiles/host/vendors.json (data::load_gpu_vendors) and the
// GPU models of profiles/gpus/ (data::load_gpu_profiles), which give each card its
// rows (assign_vendors, assign_profiles); the
// inventory keeps both for plan.
struct ScanData
{
    data::KernelCutoffs cutoffs;
    GpuVendors vendors;
    std::vector<data::GpuProfile> gpu_profiles;
};
Result<Inventory> scan_host(const util::HostFs& fs, const util::CommandRunner& runner, const ScanData& data);

// The `type` of IOMMU groups read while their functions were read (group
// number -> contents of /sys/kernel/iommu_groups/N/type, nullopt if unreadable).
using GroupTypes = std::map<int, std::optional<std::string>>;

// Parts of scan_host, exposed for tests. With group_types, the type of each
// group a function links to is read by the threads that read the functions.
// The memory BARs are read of display functions and of the functions of `vendors`.
Result<std::vector<PciDevice>> scan_pci_devices(const util::HostFs& fs, const GpuVendors& vendors, std::vector<Problem>& problems,
                                                GroupTypes* group_types = nullptr);
std::map<int, IommuGroup> scan_iommu_groups(const util::HostFs& fs);
// Lists the devices/ directory only of the groups list_members() accepts;
// the others get their type and no members (scan_host fills them in from the
// functions' own iommu_group links). Types in known are not read again.
std::map<int, IommuGroup> scan_iommu_groups(const util::HostFs& fs, const std::function<bool(int)>& list_members,
                                            const GroupTypes& known = {});
HostInfo scan_host_info(const util::HostFs& fs, const util::CommandRunner& runner);
// The running host's state that plan decides from (routes, qemu-server's pid files and
// their processes, node name, storage.cfg, .vmlist), read through HostFs.
RuntimeState scan_runtime_state(const util::HostFs& fs);
// The display functions as cards of their slots, each with its vendor's row of `vendors`.
std::vector<GpuCard> find_gpu_cards(const std::vector<PciDevice>& devices, const std::map<int, IommuGroup>& groups,
                                    const GpuVendors& vendors);
// The NVSwitch functions (PciDevice::is_gpu_switch) as cards of their slots; the other
// switches and the GPU cards in their groups are shares_with, anything else other_endpoints.
std::vector<GpuCard> find_nvswitches(const std::vector<PciDevice>& devices, const std::map<int, IommuGroup>& groups,
                                     const GpuVendors& vendors);
// Gives every GPU card and switch of `inventory` its row of `vendors`, and keeps the table
// (scan does it; plan does it for the inventory of another node's scan --json).
void assign_vendors(Inventory& inventory, const GpuVendors& vendors);
// Gives every GPU card and switch of `inventory` the row of `profiles` that lists the id
// of its first function (none: nullptr); the rows are kept with the inventory.
void assign_profiles(Inventory& inventory, std::vector<data::GpuProfile> profiles);
// Appends readiness problems (IOMMU, interrupt remapping, links, groups...).
void assess_readiness(Inventory& inventory);

// Whether the running kernel turns the Intel IOMMU on by itself, and why: from its own
// config when scan read it (Debian's kernels leave it off, Proxmox's turn it on from 6.8),
// else from the release in profiles/host/kernel.json. `why` ends a sentence: "kernel X's
// config (/boot/config-X) has CONFIG_INTEL_IOMMU_DEFAULT_ON unset". docs/facts.md: iommu.
struct IntelIommuDefault
{
    bool on = false;
    std::string why;
};
IntelIommuDefault intel_iommu_default(const Inventory& inventory);

} // namespace passthru::scan
