// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to plan/: the VM-side planners called by plan_vm (vm_plan.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/planner.hpp"
#include "plan/vm/profile.hpp"

namespace passthru::plan::detail {

inline constexpr int k_max_hostpci = 16; // hostpci0..hostpci15 (qemu-server PCI.pm)

// The Proxmox VE backend: VM config, mappings, qm commands.
void plan_proxmox_vm(const PlanContext& ctx, const VmProfile& profile, Plan& plan);
// The libvirt backend: a DomainChange for --vm DOMAIN on --connect URI.
void plan_libvirt_domain(const PlanContext& ctx, Plan& plan);

// Mapping ids for --mapping NAME: NAME for the first card, NAME-1, NAME-2, ...
std::string mapping_id_for(std::string_view name, std::size_t index);

// CPUs in a cpulist ("0-7,16-23" -> 16); nullopt when malformed.
std::optional<int> cpulist_count(std::string_view cpulist);

} // namespace passthru::plan::detail
