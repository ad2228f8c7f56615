// SPDX-License-Identifier: GPL-2.0-or-later
// passthru verify: after the reboot, is every selected function ready for
// its VM? Reads only (sysfs, /dev/vfio, /proc/cmdline, the VM config), all
// through HostFs, so it runs on fixture trees as on the live host. On the
// live host it also asks VFIO to take each group, as QEMU would, and lets
// go again (apply/vfio_probe.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apply/journal.hpp"
#include "apply/vfio_probe.hpp"
#include "data/gpu_profile.hpp"
#include "scan/inventory.hpp"
#include "util/host_fs.hpp"

namespace passthru::apply {

// What to check: the functions to pass, the VM that should carry them, the
// kernel arguments that should be active.
struct VerifyTarget
{
    std::vector<scan::PciAddress> functions;
    std::optional<std::uint64_t> vmid;
    std::vector<std::string> kernel_args;
    std::string source; // "generation 3", "VM 101's config", "--gpus all" (for messages)
};

struct VerifyCheck
{
    bool ok = false;
    std::string what; // "0000:01:00.0 is bound to vfio-pci"
    std::string fix;  // empty when ok
    // Neither proven nor failed: shown as a note, never as "ok" (VFIO not
    // asked under --root, a group a running VM holds); ok stays true.
    bool note = false;
};

struct VerifyReport
{
    bool iommu_on = false;
    std::vector<VerifyCheck> checks;

    bool all_ok() const;
};

// What a generation asks verify to check: its cards' functions (each once),
// its kernel arguments and its request's VM. What `passthru verify` checks
// with no options, and what `passthru confirm` checks on a trial boot.
VerifyTarget target_of_generation(const Manifest& m);

// Runs every check. With the IOMMU off only that one failing check is
// reported (nothing else can be right). On the live host it also asks the
// kernel's VFIO about each group (kernel_vfio); under --root it says so.
VerifyReport verify_host(const scan::Inventory& inventory, const util::HostFs& fs, const VerifyTarget& target);
// The same with VFIO reached through `vfio` (empty: not asked).
VerifyReport verify_host(const scan::Inventory& inventory, const util::HostFs& fs, const VerifyTarget& target, const VfioOpener& vfio);

// The state of every card with a function in TARGET (apply/verify_card_state.cpp): a card
// in D3cold or answering all ones fails, with the power-off fix and the onboot VMs named.
std::vector<VerifyCheck> check_card_states(const scan::Inventory& inventory, const util::HostFs& fs, const VerifyTarget& target);

// The functions a Proxmox VM config passes through: its hostpciN entries
// (raw ids, or cluster mappings resolved through /etc/pve/mapping/pci.cfg for
// this node), matched against the functions present. Errc::not_found when
// the config does not exist.
Result<std::vector<scan::PciAddress>> vm_config_functions(const scan::Inventory& inventory, const util::HostFs& fs, std::uint64_t vmid);

} // namespace passthru::apply
