// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scan/pci_address.hpp"

struct pci_access;

namespace passthru::scan {

// libpci (pciutils) pointed at <root>/sys/bus/pci through its linux-sysfs
// method and "sysfs.path" parameter, so names and config space come from the
// same tree the rest of the scan reads. libpci reports fatal errors through a
// callback that must not return; ours long-jumps back to the call site, so no
// error escapes through C code and nothing calls exit(). Failures become
// warnings in warnings() and empty answers.
class LibPci
{
public:
    explicit LibPci(const std::string& sysfs_bus_pci);
    ~LibPci();
    LibPci(const LibPci&) = delete;
    LibPci& operator=(const LibPci&) = delete;

    std::string vendor_name(std::uint16_t vendor);
    std::string device_name(std::uint16_t vendor, std::uint16_t device);
    std::string class_name(std::uint16_t class16);
    // Whether the function has the ACS extended capability (config space).
    std::optional<bool> has_acs(const PciAddress& addr);

    const std::vector<std::string>& warnings() const noexcept { return m_warnings; }

private:
    std::string lookup(int flags, int a, int b);

    pci_access* m_access = nullptr;
    std::vector<std::string> m_warnings;
};

} // namespace passthru::scan
