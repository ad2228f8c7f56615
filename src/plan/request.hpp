// SPDX-License-Identifier: GPL-2.0-or-later
// The checks every request passes, wherever it comes from: the command line
// (cli/request_options) or a saved plan (plan_json). One place, so a saved
// plan gets exactly the checks the command line gets.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.hpp"
#include "util/error.hpp"

namespace passthru::plan {

// The bonding modes of the Linux bonding driver, as ifupdown2 spells them.
extern const std::vector<std::string> k_bond_modes;

// A Linux interface name: 1 to 15 bytes (IFNAMSIZ is 16 with the NUL), no
// '/', ':' or white space, not "." or "..".
bool valid_ifname(std::string_view name);

// Errc::usage with the option it concerns when the request cannot be planned
// (a VMID for Proxmox VE that is not a number from 100 to 999999999 written
// without leading zeros, an empty --gpus, a bad interface name,
// an unknown bond mode, a confirm timeout out of range, ...).
Result<void> validate_request(const Request& request);

} // namespace passthru::plan
