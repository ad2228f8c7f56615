// SPDX-License-Identifier: GPL-2.0-or-later
// Which host drivers can claim which functions of a passed card, as data
// (profiles/host/drivers.json, schema in docs/data.md): a new host driver or
// quirk is a new entry there, not a new branch here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/host_drivers.hpp"
#include "plan/plan_detail.hpp"

namespace passthru::plan::detail {

using data::FunctionKind;
using data::HostDriver;
using data::HostDriverData;

// Whether DRIVER claims DEVICE (its vendor, kind and class match).
bool driver_claims(const HostDriver& driver, const scan::PciDevice& device);

// The drivers of the data that exist for the target kernel. An entry with since_kernel
// is kept when the target's module tree has its module (asked through libkmod) or, when
// there is no module tree to ask, when the kernel is at least that version; otherwise it
// is dropped. `why` gets one line for every such decision, naming what it rests on.
HostDriverData drivers_for_kernel(const util::HostFs& fs, const std::optional<std::string>& kernel_release,
                                  const std::optional<std::pair<int, int>>& kernel_version, HostDriverData data,
                                  std::vector<std::string>& why);

} // namespace passthru::plan::detail
