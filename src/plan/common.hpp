// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to plan/: what the planner and its rooms (host/, vm/, network/)
// share. Not a public interface.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/planner.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

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
// skipped with a warning in `warnings`. make_plan calls it once per command
// and hands the result to the rooms in PlanContext::gpu_profiles.
std::vector<GpuProfile> load_gpu_profiles(const DataDir& data, std::vector<std::string>& warnings);
// How many times load_gpu_profiles ran in this process (tests count loads).
std::size_t gpu_profile_loads() noexcept;
// The profiles of this command (empty when none were loaded).
const std::vector<GpuProfile>& gpu_profiles(const PlanContext& ctx);
const GpuProfile* find_profile(const std::vector<GpuProfile>& profiles, std::string_view vendor_device);

// Current content of a host file; nullopt when it does not exist. Other
// read failures become refusals (fail closed) and also return nullopt.
std::optional<std::string> read_current(const PlanContext& ctx, Plan& plan, std::string_view path);

// Records a file change when after differs from the current content
// (after == nullopt: delete). Merges with an earlier change of the same path.
// Returns true when a change was recorded.
bool stage_file(const PlanContext& ctx, Plan& plan, std::string_view path, std::optional<std::string> after,
                std::vector<std::string> reasons);

using util::module_key;

// "0000:01:00.0 (Audio device: TU102 High Definition Audio Controller)"
std::string describe_device(const scan::Inventory& inv, const scan::PciAddress& addr);

} // namespace passthru::plan::detail
