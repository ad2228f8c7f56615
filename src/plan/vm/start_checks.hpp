// SPDX-License-Identifier: GPL-2.0-or-later
// What Proxmox VE's own start code refuses before QEMU runs (qemu-server's
// config_to_command and its callees; docs/facts.md: qm-start), checked on
// the VM config as the plan leaves it, so that a plan never prepares a VM
// that `qm start` then refuses: too many vCPUs for the node, huge pages the
// host cannot give, pcie=1 without q35, a hostpci device or mapping the node
// does not have. Each one refuses the plan with the fix.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/pve_config.hpp"
#include "format/pve_mapping.hpp"
#include "plan/plan.hpp"
#include "scan/inventory.hpp"

namespace passthru::plan::detail {

// What the checks read besides the config.
struct StartContext
{
    const scan::Inventory& inventory;
    const format::pve::PciMappingFile* mappings = nullptr; // pci.cfg as the plan leaves it; nullptr: none
    std::optional<std::string> node;                       // this node's name; nullopt: mappings not checked
    std::string id;                                        // the VMID, for messages and fixes
};

// Refusals for everything in `config` (the current section) that makes
// qemu-server die before QEMU starts.
std::vector<Refusal> start_refusals(const StartContext& ctx, const format::pve::VmConfig& config);

// The config `qm create ID --key value ...` makes, for the same checks.
format::pve::VmConfig config_of_create(const std::vector<std::string>& argv);

// The memory of a VM config in MiB ("memory: 4096" or "memory: current=4096");
// PVE's default (512) when unset or unreadable (docs/facts.md: vm-config).
std::uint64_t vm_memory_mib(const format::pve::VmConfig& config);

// The most cores a VM of `sockets` sockets may have on a node of `cpus`
// CPUs (qemu-server: sockets x cores <= cpus); at least 1.
int max_cores(int cpus, int sockets);

} // namespace passthru::plan::detail
