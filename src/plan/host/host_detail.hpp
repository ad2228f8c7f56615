// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to plan/host/: what the host-side generators share. Not a public interface.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan/plan_detail.hpp"

namespace passthru::plan::detail {

// What every host generator needs to know, computed once by plan_host.
struct HostInputs
{
    std::optional<std::string> kernel_release;         // running kernel (the target)
    std::optional<std::pair<int, int>> kernel_version; // {6, 8}
    std::vector<scan::PciAddress> functions;           // every function of every selected card
    std::vector<std::string> vfio_ids;                 // sorted, unique vendor:device
    bool boot_vga_selected = false;
    bool acs_override = false; // pcie_acs_override goes on the command line
};

// The modules whose aliases in the target kernel's module tree match a PCI function's
// modalias (what udev would load for it), asked through libkmod; empty when the tree or
// its index is missing or an id of the function is unknown.
std::vector<std::string> target_alias_modules(const util::HostFs& fs, std::string_view kernel_release, const scan::PciDevice& dev);
// Whether a module is built into the target kernel (modules.builtin).
std::optional<bool> target_module_builtin(const util::HostFs& fs, std::string_view kernel_release, std::string_view name);

// The generators (plan/host/cmdline.cpp, modules.cpp, modprobe.cpp, readiness.cpp).
void plan_cmdline(const PlanContext& ctx, Plan& plan, const HostInputs& in);
void plan_modules(const PlanContext& ctx, Plan& plan, const HostInputs& in);
void plan_modprobe(const PlanContext& ctx, Plan& plan, const HostInputs& in);
void plan_readiness(const PlanContext& ctx, Plan& plan, const HostInputs& in);
// /etc/kernel/postinst.d/passthru (kernel_hook.cpp), when nothing is there yet.
void plan_kernel_hook(const PlanContext& ctx, Plan& plan);

} // namespace passthru::plan::detail
