// SPDX-License-Identifier: GPL-2.0-or-later
// The network side of a plan; plan_network itself is declared in planner.hpp.
#pragma once

#include "plan/plan.hpp"
#include "scan/inventory.hpp"
#include "util/host_fs.hpp"

namespace passthru::plan {

// Checks a bond/bridge request against the host: the NICs exist in
// /sys/class/net on PCI network functions, names do not collide, the
// addresses parse and the gateway lies in the bridge's subnet. Throws Error
// (Errc::usage) with a hint; nothing is planned then.
void validate_network_request(const NetworkRequest& net, const scan::Inventory& inventory, const util::HostFs& fs);

} // namespace passthru::plan
