// SPDX-License-Identifier: GPL-2.0-or-later
// Which host drivers can claim which functions of a passed card, as data
// (profiles/host/drivers.json, schema passthru.host-drivers/1 in docs/data.md):
// a new host driver or quirk is a new entry there, not a new branch in plan.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/data_dir.hpp"
#include "util/error.hpp"

namespace passthru::data {

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
    // The GPU vendor the driver belongs to ("vendor" in the data, else claims.vendor):
    // a blacklist entry is blacklisted when a card of that vendor is passed and none stays.
    std::optional<std::uint16_t> owner;
    bool blacklist = false;   // blacklisted when no GPU of the owner vendor stays on the host
    bool framebuffer = false; // a framebuffer driver: its blacklist elsewhere is no conflict
    // NVIDIA vGPU's host driver stack ("vgpu_keep"): on a vGPU host never blacklisted or softdepped
    bool vgpu_keep = false;
    // The module exists only in kernels from this version on ("since_kernel" in the data):
    // such an entry counts only when the target's module tree has the module.
    std::optional<std::pair<int, int>> since_kernel;

    std::string reason(const std::string& function) const;
};

struct HostDriverData
{
    std::vector<HostDriver> drivers;                   // in file order
    std::map<std::string, std::string> driver_modules; // sysfs driver name -> module
};

// Errc::usage naming `where` and the field when the text breaks the schema.
Result<HostDriverData> parse_host_drivers(std::string_view text, const std::string& where);
// profiles/host/drivers.json read through DATA (an /etc/passthru override first) and parsed as above.
Result<HostDriverData> load_host_drivers(const DataDir& data);

} // namespace passthru::data
