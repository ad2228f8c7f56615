// SPDX-License-Identifier: GPL-2.0-or-later
// The GPU vendors passthru handles, as data (profiles/host/vendors.json, schema
// in docs/data.md): which PCI vendor a card must have for `--gpus all` to take
// it, what its drivers are called in messages, its fabric switches, and which of
// the vendor's features (vGPU, the audio function its firmware hides) scan and
// plan know about. Scan gives every card the row of its vendor; plan decides
// from that row, never from a raw vendor id.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_dir.hpp"
#include "util/error.hpp"

namespace passthru::data {

struct GpuVendor
{
    std::uint16_t id = 0;  // PCI vendor id ("10de" in the data)
    std::string name;      // "NVIDIA", as messages name the vendor
    bool gpus_all = false; // `--gpus all` selects the cards of this vendor
    std::string drivers;   // its host drivers as messages name them ("nouveau/nvidia")
    // The PCI class (class and subclass) of the vendor's fabric switches' management
    // functions (NVSwitch: "0680"); nullopt: the vendor has none.
    std::optional<std::uint16_t> switch_class;
    // The vendor's vGPU stack: scan looks for its evidence on this vendor's GPUs
    // (scan/vgpu.*), and plan keeps the vendor's drivers on a vGPU host.
    bool vgpu = false;
    // Linux exposes an audio function of this vendor's cards that the firmware hid
    // (the hint of a missing audio function says so).
    bool hidden_audio = false;
};

// The rows of the file, in file order. Rows are shared: a scanned card holds its
// vendor's row, so copies of an Inventory keep it.
struct GpuVendors
{
    std::vector<std::shared_ptr<const GpuVendor>> rows;

    // The row of a PCI vendor id; nullptr when the data has none.
    std::shared_ptr<const GpuVendor> find(std::optional<std::uint16_t> id) const;
    // Whether a function of this vendor and class (class and subclass) is a fabric switch.
    bool is_switch(std::optional<std::uint16_t> vendor, std::optional<std::uint16_t> class16) const;
    // The names of the vendors `--gpus all` selects, joined by " or " ("NVIDIA").
    std::string gpus_all_names() const;
};

// The classes (class and subclass) a vendor's switch_class can never name:
// the safety classes of a device come from the device. A storage (01xx),
// network (02xx) or display (03xx) function, a host, ISA or PCI bridge
// (0600-0604), a system peripheral (08xx, the IOMMU among them), a USB (0c03)
// or SMBus (0c05) controller is never a fabric switch, whatever a row says.
bool protected_class(std::uint16_t class16);

// Parses the JSON text of profiles/host/vendors.json; `where` names the file in
// errors. Errc::usage with one line naming the file and the field.
Result<GpuVendors> parse_gpu_vendors(std::string_view json_text, const std::string& where);

// profiles/host/vendors.json read through DATA and parsed as above: the CLI loads it once per
// command and hands it to scan, which keeps it in the Inventory for plan.
Result<GpuVendors> load_gpu_vendors(const DataDir& data);

} // namespace passthru::data
