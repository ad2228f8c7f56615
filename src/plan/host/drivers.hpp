// SPDX-License-Identifier: GPL-2.0-or-later
// Which host drivers can claim which functions of a passed card, as data
// (profiles/host/drivers.json, schema in docs/data.md): a new host driver or
// quirk is a new entry there, not a new branch here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/common.hpp"

namespace passthru::plan::detail {

enum class FunctionKind
{
    any,
    display, // PCI base class 03 (VGA or 3D controller)
};

struct HostDriver
{
    std::string module;                  // as modprobe.d names it ("snd_hda_intel")
    bool claims_something = false;       // false: only blacklisted, never softdepped
    std::optional<std::uint16_t> vendor; // claims functions of this vendor only
    FunctionKind kind = FunctionKind::any;
    std::optional<std::uint16_t> class16; // claims functions of this class only ("0403")
    std::string why;                      // "{function}" is replaced by the function's address
    bool blacklist = false;               // blacklisted when no NVIDIA GPU stays on the host
    bool framebuffer = false;             // a framebuffer driver: its blacklist elsewhere is no conflict

    bool claims(const scan::PciDevice& device) const;
    std::string reason(const std::string& function) const;
};

struct HostDriverData
{
    std::vector<HostDriver> drivers;                   // in file order
    std::map<std::string, std::string> driver_modules; // sysfs driver name -> module
};

// Loads profiles/host/drivers.json (an /etc/passthru override first).
// Errc::usage naming the file and the field when it does not follow the schema.
Result<HostDriverData> load_host_drivers(const DataDir& data);

} // namespace passthru::plan::detail
