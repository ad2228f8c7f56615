// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to plan/: what the planner and its rooms (host/, vm/, network/)
// share. Not a public interface.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/gpu_profile.hpp"
#include "data/nvswitch.hpp"
#include "plan/after_step.hpp" // the after-steps: the rooms build their commands from its table
#include "plan/paths.hpp"      // the rooms' paths: they include plan/paths.hpp through here
#include "plan/planner.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

using data::GpuProfile;
using data::KnownIssue;
using data::ProfileFunction;

// Compares a selected card's functions with its profile's `functions`: a
// function the profile lists that the host does not show, or shows with another
// class, is a warning (the VM will not get what the model has); a function the
// profile does not list is a note. Nothing when the card has no profile row or it no layout.
void check_function_layout(const scan::Inventory& inv, const scan::GpuCard& card, const std::string& label, Plan& plan);

using data::FabricShape;
using data::NvswitchGeneration;

// On an NVSwitch system: the switches that go with the selected cards under the full
// passthrough model, and the notes, warnings or refusal that say why. Nothing elsewhere.
Result<std::vector<const scan::GpuCard*>> plan_fabric(const scan::Inventory& inv, const data::DataDir& data, const Request& request,
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

// Whether the target kernel's module tree has a module (loadable or
// built-in), asked through libkmod: nullopt when <root>/lib/modules/<kver>
// or its index is missing (plan/host/host_plan.cpp; the container room asks
// it for nvidia).
std::optional<bool> target_has_module(const util::HostFs& fs, std::string_view kernel_release, std::string_view name);

// "GPU 0000:01:00 (TU102 [GeForce RTX 2080 Ti])", "NVSwitch ...": a card as plan's messages name it.
std::string card_label(const scan::Inventory& inv, const scan::GpuCard& card);
// Group safety (selection.cpp): refusals for cards that share an IOMMU group with
// an endpoint not passed along, or have none; true when --acs-override is needed.
bool check_groups(const scan::Inventory& inv, const Request& req, const std::vector<const scan::GpuCard*>& cards, Plan& plan);
// Refuses a selected card whose functions serve SR-IOV virtual functions (docs/facts.md: vgpu).
void refuse_cards_serving_vfs(const scan::Inventory& inv, const std::vector<const scan::GpuCard*>& cards, Plan& plan);

// "0000:01:00.0 (Audio device: TU102 High Definition Audio Controller)"
std::string describe_device(const scan::Inventory& inv, const scan::PciAddress& addr);

} // namespace passthru::plan::detail
