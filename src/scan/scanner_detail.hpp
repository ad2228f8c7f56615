// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to scan/: what the scanner's files share (scan/scanner.cpp lists and reads
// every PCI function, scan/scanner_device.cpp reads one). Not a public interface.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scan/inventory.hpp"
#include "scan/libpci.hpp"
#include "util/host_fs.hpp"

namespace passthru::scan::detail {

inline constexpr const char* k_pci_devices = "/sys/bus/pci/devices";

// The nearest PCI function above the device in the sysfs device path
// (nullopt: none, as for a virtual network interface).
std::optional<PciAddress> parent_from_path(const std::string& path);

// Reads the sysfs directory of the function `name` (its entry in
// /sys/bus/pci/devices) into a PciDevice; `pci` decodes its config space. A
// missing or garbled attribute leaves its field empty and adds a warning to
// problems. The memory BARs are read of display functions and of the functions
// of `vendors`. Runs on worker threads: no libpci name lookups here.
PciDevice read_pci_device(const util::HostFs& fs, LibPci& pci, const util::HostDir& devices_dir,
                          const std::optional<util::HostDir>& sys_devices, const std::string& name, const PciAddress& addr,
                          const GpuVendors& vendors, std::vector<Problem>& problems);

} // namespace passthru::scan::detail
