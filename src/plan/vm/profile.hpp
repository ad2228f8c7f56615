// SPDX-License-Identifier: GPL-2.0-or-later
// VM profiles (profiles/vm/<name>.json, read by data/vm_profile.*) with plan's
// checks: the rules PVE applies to the VM config they end up in.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/vm_profile.hpp"
#include "plan/planner.hpp"

namespace passthru::plan {

inline constexpr std::string_view k_default_vm_profile = "linux-ml";

using VmProfile = data::VmProfile;

// PVE's VM-level CPU flag allow-list (qemu-server CPUFlags.pm, docs/facts.md: vm-config).
const std::vector<std::string>& vm_cpu_flag_allow_list();

// Parses (data::parse_vm_profile) and checks a profile (flags, hv-vendor-id,
// hugepages, machine, bios). Errc::parse with the offending field on bad input; a string with a
// line break or another control character is refused (Errc::precondition).
// `origin`, the file it came from, is named in every error.
Result<VmProfile> parse_vm_profile(std::string_view name, std::string_view json_text, std::string_view origin = {});
// data::load_vm_profile with the checks above. Errc::usage
// when no such profile exists (with the available names as a hint).
Result<VmProfile> load_vm_profile(const data::DataDir& data, std::string_view name);

} // namespace passthru::plan
