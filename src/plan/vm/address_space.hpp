// SPDX-License-Identifier: GPL-2.0-or-later
// The guest's physical address space under OVMF: how many address bits the
// VM's cpu line gives it, how big its 64-bit PCI MMIO window is, and whether
// the passed cards' 64-bit prefetchable BARs and the guest RAM fit
// (docs/facts.md: address-space; the limits: profiles/host/address-space.json).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/address_space.hpp"
#include "format/pve_config.hpp"
#include "plan/planner.hpp"

namespace passthru::plan::detail {

// The limits of profiles/host/address-space.json, loaded by data/address_space.*.
using data::AddressLimits;

// What the guest gets from a cpu line.
struct GuestAddressing
{
    std::string model;
    std::optional<int> bits;        // after OVMF's caps; nullopt: cannot tell (see why)
    std::optional<bool> pdpe1gb;    // nullopt: the model's own flags are unknown
    bool trusted = false;           // OVMF sizes a dynamic window from the width
    std::uint64_t window_bytes = 0; // the 64-bit MMIO window OVMF opens
    bool fits = true;
    std::string why; // one clause: what limits the guest
};

// The bytes the 64-bit prefetchable BARs of CARDS need in the guest: per
// card (one PCIe root port each) the sum rounded up to its largest BAR.
std::uint64_t mmio64_needed(const scan::Inventory& inventory, const std::vector<const scan::GpuCard*>& cards);

// How mmio64_needed came to its number, for the plan's reasons: per card its
// 64-bit prefetchable BARs, their sum and the alignment to the largest one.
std::string mmio64_explained(const scan::Inventory& inventory, const std::vector<const scan::GpuCard*>& cards);

// The guest's address bits and window for CPU (a VM config cpu value; empty:
// no cpu line) and whether MMIO64 bytes of BARs and RAM_MIB of RAM fit.
GuestAddressing guest_addressing(const AddressLimits& limits, const scan::HostInfo& host, const format::pve::PropertyString& cpu,
                                 std::uint64_t mmio64, std::uint64_t ram_mib);

// The plan's answer for one VM: the cpu line to write, why it differs from
// the one planned without the address-space check, and the warnings.
struct AddressDecision
{
    format::pve::PropertyString cpu;
    std::optional<std::string> reason; // a clause for the cpu change's reason line
    std::vector<std::string> warnings;
    // What the chosen cpu line gives the guest against what the BARs need (empty:
    // no 64-bit BAR sizes known, or the guest's bits cannot be told).
    std::string computation;
    // Set when not even cpu host (the host CPU's own address bits, OVMF's caps) gives
    // a window the BARs fit in: no cpu setting helps, the plan refuses.
    std::optional<std::string> host_limit;
};

// PLANNED is the cpu line the profile gives the VM, CURRENT the one it has (nullopt:
// a new VM). When the cards' BARs do not fit under PLANNED: a qemu64/kvm64
// model gets phys-bits=host and +pdpe1gb (when the host's qemu-server knows
// phys-bits and the host CPU has pdpe1gb); anything else that the plan keeps is
// a warning.
AddressDecision plan_address_space(const AddressLimits& limits, const scan::HostInfo& host, const format::pve::PropertyString& planned,
                                   const std::optional<format::pve::PropertyString>& current, std::uint64_t mmio64, std::uint64_t ram_mib,
                                   const std::string& vm_id);

// Set (with why) when the host CPU cannot address MMIO64 bytes of BARs above
// RAM_MIB of guest RAM at all: the host's physical address bits, capped by
// OVMF, are the most any guest gets. No cpu setting helps: the plan refuses.
std::optional<std::string> address_space_host_limit(const AddressLimits& limits, const scan::HostInfo& host, std::uint64_t mmio64,
                                                    std::uint64_t ram_mib);

// True when CPU's model is one qemu-server builds on qemu64/kvm64.
bool is_qemu64_model(const AddressLimits& limits, const format::pve::PropertyString& cpu);

// "32 GiB", "512 MiB"
std::string size_text(std::uint64_t bytes);

} // namespace passthru::plan::detail
