// SPDX-License-Identifier: GPL-2.0-or-later
// Editing a libvirt domain definition: PCI host devices for GPU cards.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scan/pci_address.hpp"
#include "util/error.hpp"

namespace passthru::plan {

struct HostdevEdit
{
    std::string xml;                  // the new definition (unchanged when nothing was needed)
    std::vector<std::string> reasons; // one line per card or controller added
    bool changed = false;
};

// Gives every card (all its functions) to the domain: one
// <hostdev mode='subsystem' type='pci' managed='yes'> per function, all
// functions of a card on one guest bus/slot with multifunction='on' on
// function 0, so the guest sees the card as the host does. On q35 each card
// sits behind its own pcie-root-port (an unused one is reused, else one is
// added); on i440fx it takes a free slot of bus 0. A card already attached
// exactly like that is left alone; other hostdevs of its functions are
// replaced. Errc::parse when the XML cannot be read; Errc::precondition
// when no guest slot is free.
Result<HostdevEdit> add_pci_hostdevs(std::string_view domain_xml, const std::vector<std::vector<scan::PciAddress>>& cards);

// The parts of a domain the guest's physical address space depends on.
struct DomainCpu
{
    bool present = false;                          // the domain has a <cpu> element
    std::string mode;                              // its mode ("custom" when it has none)
    std::string model;                             // <model> of a custom CPU
    std::string maxphysaddr;                       // <maxphysaddr mode=...>: "passthrough", "emulate" or ""
    std::optional<unsigned long> maxphysaddr_bits; // its bits
    std::optional<unsigned long> memory_mib;       // <memory>, in MiB
};

// Reads DOMAIN_XML's <cpu> and <memory>. Errc::parse when the XML cannot be read.
Result<DomainCpu> read_domain_cpu(std::string_view domain_xml);

// Gives the guest the host CPU's physical address bits: <maxphysaddr
// mode='passthrough'/> in <cpu mode='host-passthrough'> (libvirt allows the
// passthrough mode only there). A domain without <cpu> gets that <cpu>; a
// maxphysaddr in emulate mode is replaced. Errc::precondition when the domain's
// <cpu> has another mode (the plan then only warns).
Result<std::string> pass_host_phys_bits(std::string_view domain_xml);

} // namespace passthru::plan
