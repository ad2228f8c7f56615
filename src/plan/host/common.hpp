// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to plan/: helpers shared by the planner and the host-side
// generators (host_*.cpp). Not a public interface.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan/planner.hpp"

namespace passthru::plan::detail {

// The generated files passthru owns (documented in docs/plan.md).
inline constexpr std::string_view k_grub_dropin = "/etc/default/grub.d/passthru.cfg";
inline constexpr std::string_view k_modprobe_conf = "/etc/modprobe.d/passthru-vfio.conf";
inline constexpr std::string_view k_modules_load_conf = "/etc/modules-load.d/vfio.conf";
inline constexpr std::string_view k_initramfs_modules = "/etc/initramfs-tools/modules";

// A GPU model from profiles/gpus/*.json.
struct GpuProfile
{
    std::string file; // "rtx-2080-ti.json"
    std::string name;
    std::string architecture;
    std::string chip;
    std::optional<double> vram_gib;
    std::optional<int> tdp_watts;
    std::vector<std::string> ids; // "10de:1e07"
    std::vector<std::string> quirks;
    std::string vram_note; // e.g. memory-modded variants the ids cannot tell apart
};

// Loads every profiles/gpus/*.json (overrides first); a broken profile is
// skipped with a warning in `warnings`.
std::vector<GpuProfile> load_gpu_profiles(const DataDir& data, std::vector<std::string>& warnings);
const GpuProfile* find_profile(const std::vector<GpuProfile>& profiles, std::string_view vendor_device);

// What every host generator needs to know, computed once by plan_host.
struct HostInputs
{
    std::optional<std::string> kernel_release;          // running kernel (the target)
    std::optional<std::pair<int, int>> kernel_version;  // {6, 8}
    std::vector<scan::PciAddress> functions;            // every function of every selected card
    std::vector<std::string> vfio_ids;                  // sorted, unique vendor:device
    bool boot_vga_selected = false;
    bool acs_override = false; // pcie_acs_override goes on the command line
    bool module_files_changed = false; // set by generators: initramfs needs a refresh
    bool cmdline_changed = false;      // set by generators: boot loader needs a refresh
};

// Current content of a host file; nullopt when it does not exist. Other
// read failures become refusals (fail closed) and also return nullopt.
std::optional<std::string> read_current(const PlanContext& ctx, Plan& plan, std::string_view path);

// Records a file change when after differs from the current content
// (after == nullopt: delete). Merges with an earlier change of the same path.
// Returns true when a change was recorded.
bool stage_file(const PlanContext& ctx, Plan& plan, std::string_view path, std::optional<std::string> after,
                std::vector<std::string> reasons);

// Kernel module names compare with '-' and '_' alike.
std::string module_key(std::string_view name);

// Whether the target kernel's module tree has a module (loadable or
// built-in), asked through libkmod: nullopt when <root>/lib/modules/<kver>
// or its index is missing.
std::optional<bool> target_has_module(const util::HostFs& fs, std::string_view kernel_release, std::string_view name);
// Whether a module is built into the target kernel (modules.builtin).
std::optional<bool> target_module_builtin(const util::HostFs& fs, std::string_view kernel_release, std::string_view name);

// The generators (plan/host/cmdline.cpp, modules.cpp, modprobe.cpp, readiness.cpp).
void plan_cmdline(const PlanContext& ctx, Plan& plan, HostInputs& in);
void plan_modules(const PlanContext& ctx, Plan& plan, HostInputs& in);
void plan_modprobe(const PlanContext& ctx, Plan& plan, HostInputs& in);
void plan_readiness(const PlanContext& ctx, Plan& plan, const HostInputs& in);

// "0000:01:00.0 (Audio device: TU102 High Definition Audio Controller)"
std::string describe_device(const scan::Inventory& inv, const scan::PciAddress& addr);

} // namespace passthru::plan::detail
