// SPDX-License-Identifier: GPL-2.0-or-later
// The kernel releases facts change at (profiles/host/kernel.json), loaded by
// data/kernel_cutoffs.*: scan keeps them in the Inventory under these names.
#pragma once

#include "data/kernel_cutoffs.hpp"

namespace passthru::scan {

using data::KernelCutoffs;
using data::KernelVersion;
using data::parse_kernel_cutoffs;

} // namespace passthru::scan
