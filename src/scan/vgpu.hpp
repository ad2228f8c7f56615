// SPDX-License-Identifier: GPL-2.0-or-later
// Whether the host is set up for NVIDIA vGPU: the vGPU manager's systemd
// units, Proxmox VE's SR-IOV units enabled, SR-IOV virtual functions on
// NVIDIA GPUs (docs/facts.md: vgpu). Such a host keeps the `nvidia` driver
// loaded for the cards that serve vGPUs, so plan never blacklists or
// softdeps it there.
#pragma once

#include <string>
#include <vector>

#include "scan/inventory.hpp"
#include "util/host_fs.hpp"

namespace passthru::scan {

// The evidence for a vGPU host, one line each; empty: not a vGPU host. The GPUs
// looked at are those of the vendors whose row has `vgpu` (profiles/host/vendors.json).
std::vector<std::string> detect_vgpu_host(const util::HostFs& fs, const std::vector<PciDevice>& devices, const GpuVendors& vendors);

} // namespace passthru::scan
