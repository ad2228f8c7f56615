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
    // What the config space bytes (as read from sysfs `config`) say, decoded
    // by libpci from a cache of those bytes (pci_setup_cache), so no second
    // read of the file. Fields stay empty when the bytes are too short: an
    // unprivileged read of `config` returns only the first 64 bytes.
    struct ConfigFacts
    {
        std::optional<std::uint16_t> subsystem_vendor;
        std::optional<std::uint16_t> subsystem_device;
        std::optional<std::uint8_t> revision;
        std::optional<std::uint8_t> header_type;
        bool pcie = false;             // a PCI Express capability was found
        std::optional<int> link_speed; // GT/s code of Link Status (1 = 2.5, 2 = 5, 3 = 8, ...)
        std::optional<int> link_width;
        std::optional<int> max_link_speed; // highest supported speed code
        std::optional<int> max_link_width;
        std::optional<bool> acs;   // needs the 4096-byte extended space
        std::optional<bool> sriov; // likewise
    };
    ConfigFacts parse_config(const PciAddress& addr, std::string& bytes);

    const std::vector<std::string>& warnings() const noexcept { return m_warnings; }

private:
    std::string lookup(int flags, int a, int b);

    pci_access* m_access = nullptr;
    std::vector<std::string> m_warnings;
};

} // namespace passthru::scan
