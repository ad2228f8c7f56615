// SPDX-License-Identifier: GPL-2.0-or-later
// Another cluster node's 'passthru scan --json' document (schema passthru.scan/1),
// read back into the part of an Inventory that card selection, group safety and
// a cluster mapping use: devices (address, ids, class, IOMMU group, driver,
// bridge, SR-IOV), IOMMU groups, GPU cards with their isolation verdict, the
// kernel and whether the IOMMU is on. The document is hostile input: every
// field used is type- and range-checked, and every error names the file and
// the field (Errc::usage, exit 2, as for a saved plan given with --plan).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "plan/plan.hpp"
#include "scan/inventory.hpp"
#include "util/error.hpp"

namespace passthru::plan {

// The inventory of a scan document; WHAT names it in errors ("--node-scan gpu2=FILE").
// Its cards get their rows of `vendors` (this node's profiles/host/vendors.json), as
// scan gives them to the cards of this host.
Result<scan::Inventory> inventory_from_scan_json(const nlohmann::json& doc, const std::string& what, const scan::GpuVendors& vendors);

// Reads and checks the file of one --node-scan (on this machine, not under --root).
Result<scan::Inventory> read_node_scan(const NodeScan& node_scan, const scan::GpuVendors& vendors);

} // namespace passthru::plan
