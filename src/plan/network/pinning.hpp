// SPDX-License-Identifier: GPL-2.0-or-later
// NIC names pinned by systemd .link files the way Proxmox VE 9 pins them
// (pve-network-interface-pinning and the 9.1 installer: one
// /usr/local/lib/systemd/network/50-pmx-<name>.link per NIC, matched by
// permanent MAC; docs/facts.md: pve9).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan_detail.hpp"

namespace passthru::plan {

struct PinnedNic
{
    std::string name; // [Link] Name=
    std::string mac;  // [Match] MACAddress=, lower case
    std::string file; // the .link file that pins it
};

// The name stem of the files Proxmox's tool and installer write to
// k_systemd_network_d (plan/paths.hpp); the tool also reads the older 50-pve-.
inline constexpr std::string_view k_pin_prefix = "nic";

// Every 50-pmx-*.link / 50-pve-*.link file under the root. A file that is not a
// plain [Match]/[Link] file with MACAddress= and Name= is skipped with a warning.
std::vector<PinnedNic> read_pinned_nics(const util::HostFs& fs, std::vector<std::string>& warnings);

// The file's text as Proxmox writes it for NAME matched by MAC.
std::string link_file_text(std::string_view mac, std::string_view name);

// What --pin-nics adds: a name for every physical NIC the scan found that no
// .link file pins yet (kernel name -> pinned name), and the files that pin them.
struct PinChange
{
    std::map<std::string, std::string> rename;
    std::map<std::string, std::string> files; // path -> content
    std::map<std::string, std::string> why;   // path -> reason
};
PinChange plan_pins(const scan::Inventory& inventory, const std::vector<PinnedNic>& pins);

// TEXT of an interfaces(5) file with every reference to a renamed NIC (stanza
// names, auto lines, bond members, bridge ports, VLAN devices NIC.N) renamed.
std::string rename_nics(std::string_view text, const std::map<std::string, std::string>& rename);

// The bond's members checked against the pins: a kernel name that a .link
// file gives another name at the next boot is refused; on a Proxmox VE 9 host
// unpinned kernel names are warned about (unless --pin-nics pins them now).
void check_bond_pinning(const PlanContext& ctx, const std::vector<std::string>& slaves, const std::vector<PinnedNic>& pins,
                        bool pinning_now, Plan& plan);

// A pinned name the kernel does not use yet (its .link takes effect at the
// next boot) -> the NIC's current kernel name, found by permanent MAC.
std::map<std::string, std::string> pending_pins(const scan::Inventory& inventory, const std::vector<PinnedNic>& pins);

} // namespace passthru::plan
