// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to plan/: what the planner and its rooms (host/, vm/, network/)
// share. Not a public interface.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/after_step.hpp" // the after-steps: the rooms build their commands from its table
#include "plan/paths.hpp"      // the rooms' paths: they include plan/paths.hpp through here
#include "plan/planner.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

// One PCI function of a GPU model as its profile lists it.
struct ProfileFunction
{
    int function = 0;          // 0-7
    std::uint16_t class16 = 0; // class and subclass, 0x0403
    std::string role;          // "HDMI/DP audio"
};

// A known problem of a model (profiles/gpus `known_issues[]`): shown as a
// plan warning for every selected card of the model, with what to do.
struct KnownIssue
{
    std::string issue;                // what goes wrong
    std::string advice;               // what to do about it
    std::vector<std::string> sources; // public reports (at least one)
};

// A GPU model from profiles/gpus/*.json (schema passthru.gpu-profile/1, docs/data.md).
struct GpuProfile
{
    std::string file; // "rtx-2080-ti.json"
    std::string name;
    std::optional<double> vram_gib;
    std::vector<std::string> ids;           // "10de:1e07"
    std::vector<ProfileFunction> functions; // the layout of the card; empty: not given
    std::vector<std::string> quirks;
    std::vector<KnownIssue> known_issues;
    std::string vram_note; // e.g. memory-modded variants the ids cannot tell apart
};

// Parses one profile; `where` names the file in the error (one line naming the
// file and the field, Errc::usage).
Result<GpuProfile> parse_gpu_profile(std::string_view json_text, const std::string& where);

// Loads every profiles/gpus/*.json (overrides first). A profile that breaks the
// schema, or claims an id another profile claims, stops the command. make_plan
// calls it once per command and hands the result to the rooms in
// PlanContext::gpu_profiles.
Result<std::vector<GpuProfile>> load_gpu_profiles(const DataDir& data);
// How many times load_gpu_profiles ran in this process (tests count loads).
std::size_t gpu_profile_loads() noexcept;
// The profiles of this command (empty when none were loaded).
const std::vector<GpuProfile>& gpu_profiles(const PlanContext& ctx);
const GpuProfile* find_profile(const std::vector<GpuProfile>& profiles, std::string_view vendor_device);

// Compares a selected card's functions with its profile's `functions`: a
// function the profile lists that the host does not show, or shows with another
// class, is a warning (the VM will not get what the model has); a function the
// profile does not list is a note. Nothing when no profile or no layout.
void check_function_layout(const scan::Inventory& inv, const scan::GpuCard& card, const std::vector<GpuProfile>& profiles,
                           const std::string& label, Plan& plan);

// The shapes of a VM that NVIDIA's full-passthrough model supports (docs/facts.md: nvswitch).
enum class FabricShape
{
    whole_board, // every GPU and every NVSwitch of the host: NVLink in the guest
    single_gpu,  // one GPU, no switch: no NVLink
};

// One NVSwitch generation from profiles/host/nvswitch.json (schema passthru.nvswitch/1, docs/data.md).
struct NvswitchGeneration
{
    std::string name;             // "third-generation NVSwitch (HGX H100/H200)"
    std::vector<std::string> ids; // "10de:22a3"
    std::vector<FabricShape> shapes;
    std::vector<std::string> guest_needs; // one note each
};

// Errc::usage naming `origin` and the field when the file breaks the schema.
Result<std::vector<NvswitchGeneration>> parse_nvswitch_generations(std::string_view text, const std::string& origin);

// On an NVSwitch system: the switches that go with the selected cards under the full
// passthrough model, and the notes, warnings or refusal that say why. Nothing elsewhere.
Result<std::vector<const scan::GpuCard*>> plan_fabric(const scan::Inventory& inv, const DataDir& data, const Request& request,
                                                      const std::vector<const scan::GpuCard*>& cards, Plan& plan);

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
