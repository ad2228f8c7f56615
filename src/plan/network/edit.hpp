// SPDX-License-Identifier: GPL-2.0-or-later
// The bond/bridge editor: turns the current interfaces file into the one the
// request needs, the way Proxmox VE writes it (docs/facts.md: network), changing only the
// lines the request needs. Pure: no host access, so it is tested on text.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "format/interfaces.hpp"
#include "plan/plan.hpp"

namespace passthru::plan {

struct BondBridgeSpec
{
    std::vector<std::string> slaves;
    std::string bond = "bond0";
    std::string mode = "balance-rr";
    std::optional<std::string> xmit_hash_policy;
    std::string bridge = "vmbr0";
    std::optional<std::string> address; // CIDR, already validated
    std::optional<std::string> gateway; // already validated
    bool vlan_aware = false;
};

struct NetworkEdit
{
    std::string text;                 // the new file
    bool changed = false;             // text differs from the input
    std::vector<std::string> reasons; // one line per change, for the plan
    std::vector<std::string> warnings;
    std::vector<Refusal> refusals;    // conflicts in the current file: nothing may be written
    std::vector<std::string> touched; // interfaces whose configuration changes
};

// bond-xmit-hash-policy is written only for these modes (pve-common Interfaces.pm writer).
bool bond_mode_uses_xmit_hash_policy(std::string_view mode);

// Edits a parsed file. Decisions (documented in docs/network.md):
// - the NICs become `inet manual` stanzas without address options;
// - an address a port (or the bond) carries moves to the bridge when it is
//   the only one and --address was not given; two address sources are a
//   refusal; --address replaces them (with a warning);
// - the bridge's ports that are bond members are replaced by the bond, other
//   ports stay; bridge-stp/bridge-fd are added only when missing;
// - `bridge-vlan-aware` other than yes is removed (PVE reads any such line as yes).
NetworkEdit edit_bond_bridge(const format::InterfacesFile& current, const BondBridgeSpec& spec);

} // namespace passthru::plan
