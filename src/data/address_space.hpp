// SPDX-License-Identifier: GPL-2.0-or-later
// The limits of the guest's physical address space under OVMF, as data
// (profiles/host/address-space.json, schema in docs/data.md; the facts in
// docs/facts.md: address-space). plan/vm/address_space.* decides from them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_dir.hpp"
#include "util/error.hpp"

namespace passthru::data {

struct AddressLimits
{
    int qemu_default_phys_bits = 0;                                      // QEMU's phys-bits for a model without host-phys-bits
    std::vector<std::string> host_phys_bits_models;                      // models QEMU gives host-phys-bits by default
    std::vector<std::string> qemu64_models;                              // models qemu-server builds on qemu64/kvm64 (no pdpe1gb)
    std::string default_model;                                           // qemu-server's model when the config has no cpu line
    int ovmf_max_phys_bits = 0;                                          // OVMF's cap with 4-level paging
    int ovmf_no_1g_pages_max_bits = 0;                                   // OVMF's cap without pdpe1gb
    int ovmf_trusted_min_bits = 0;                                       // OVMF trusts a CPUID width from this many bits up ...
    std::map<std::string, std::vector<int>> ovmf_trusted_bits_by_vendor; // ... or these per host CPU vendor
    int ovmf_window_fraction_shift = 0;                                  // dynamic window: 1/2^shift of the address space
    std::uint64_t ovmf_classic_window_mib = 0;                           // the window when OVMF does not trust the width
    std::uint64_t ram_start_mib = 0;                                     // guest RAM above 4 GiB ends below RAM + this
    std::uint64_t headroom_mib = 0;                                      // the VM's other devices' 64-bit BARs
    std::string phys_bits_since_qemu_server;                             // first qemu-server that knows cpu phys-bits
};

// Parses the limits; Errc::usage naming ORIGIN and the field when the text
// breaks the schema.
Result<AddressLimits> parse_address_limits(std::string_view text, const std::string& origin);

// profiles/host/address-space.json read through DATA and parsed as above.
Result<AddressLimits> load_address_limits(const DataDir& data);

} // namespace passthru::data
