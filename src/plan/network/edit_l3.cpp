// SPDX-License-Identifier: GPL-2.0-or-later
// The bond/bridge editor's checks and decisions (plan/network/edit_detail.hpp): the
// conflicts that refuse the request, and what address configuration the bridge
// carries per family afterwards (docs/network.md).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "plan/network/address.hpp"
#include "plan/network/edit_detail.hpp"

namespace passthru::plan::detail {

namespace {

using format::IfaceStanza;
using format::InterfacesFile;

bool is_l3_key(std::string_view key)
{
    return std::find(k_l3_keys.begin(), k_l3_keys.end(), key) != k_l3_keys.end();
}

bool carries_l3(const InterfacesFile& file, const IfaceStanza& stanza)
{
    if (stanza.method.empty() || stanza.method == "manual" || stanza.method == "loopback") {
        return false;
    }
    // `iface bond0 inet static` without an address (the seed's bond) carries nothing.
    return stanza.method != "static" || file.find_option(stanza, "address").has_value();
}

L3Config l3_of(const InterfacesFile& file, const IfaceStanza& stanza)
{
    L3Config out{stanza.name, stanza.family, stanza.method, {}};
    for (const std::size_t index : stanza.options) {
        const auto& line = file.lines()[index];
        if (is_l3_key(line.keyword())) {
            out.options.emplace_back(std::string(line.keyword()), line.value());
        }
    }
    return out;
}

} // namespace

void Editor::check_conflicts()
{
    for (const auto& st : m_file.stanzas()) {
        const auto ports = option_words(m_file, st, "bridge-ports");
        const auto members = bond_members(m_file, st);
        const auto raw_device = m_file.option(st, "vlan-raw-device");
        if (st.name != m_spec.bridge) {
            for (const auto& nic : m_spec.slaves) {
                if (contains_word(ports, nic)) {
                    refuse(nic + " is a port of bridge " + st.name + " (line " + std::to_string(m_file.lines()[st.header].line_number)
                               + ")",
                           "take it out of " + st.name + " first, or bond it under --bridge " + st.name);
                }
            }
            if (contains_word(ports, m_spec.bond)) {
                refuse(m_spec.bond + " is already a port of bridge " + st.name, "use --bridge " + st.name + " or another --bond-name");
            }
        }
        if (st.name != m_spec.bond) {
            for (const auto& nic : m_spec.slaves) {
                if (contains_word(members, nic)) {
                    refuse(nic + " is already a member of bond " + st.name, "use --bond-name " + st.name + " to change that bond");
                }
            }
        }
        for (const auto& nic : m_spec.slaves) {
            const bool dotted = st.name.size() > nic.size() + 1 && st.name.compare(0, nic.size() + 1, nic + ".") == 0;
            if (dotted || (raw_device && *raw_device == nic)) {
                refuse("VLAN interface " + st.name + " runs on " + nic + ", which would become a bond member",
                       "move it onto the bond (" + m_spec.bond + "." + "<vid>) or the bridge first");
            }
        }
        if (st.name == m_spec.bond && !ports.empty()) {
            refuse(m_spec.bond + " is a bridge in the interfaces file", "choose another --bond-name");
        }
        if (st.name == m_spec.bridge && !members.empty()) {
            refuse(m_spec.bridge + " is a bond in the interfaces file", "choose another --bridge");
        }
    }
}

void Editor::collect_sources()
{
    std::vector<std::string> names = m_spec.slaves;
    names.push_back(m_spec.bond);
    for (const auto& name : names) {
        for (const auto& st : m_file.find(name)) {
            if (carries_l3(m_file, st)) {
                m_sources.push_back(l3_of(m_file, st));
            }
        }
    }
}

// Decides what the bridge carries per address family (m_bridge_l3).
void Editor::plan_bridge_l3()
{
    std::optional<Cidr> want;
    if (m_spec.address) {
        want = parse_cidr(*m_spec.address);
    }
    std::optional<IpAddress> want_gw;
    if (m_spec.gateway) {
        want_gw = parse_ip(*m_spec.gateway);
    }
    for (const std::string family : {"inet", "inet6"}) {
        if (!plan_family_l3(family, want, want_gw)) {
            return;
        }
    }
    refuse_second_gateway();
}

// One address family of the bridge: --address, else the one member's
// configuration moved up, else --gateway added to what the bridge has.
// False once refused.
bool Editor::plan_family_l3(const std::string& family, const std::optional<Cidr>& want, const std::optional<IpAddress>& want_gw)
{
    std::vector<const L3Config*> sources;
    for (const auto& s : m_sources) {
        if (s.family == family) {
            sources.push_back(&s);
        }
    }
    std::optional<L3Config> bridge_now;
    if (auto st = m_file.find(m_spec.bridge, family); st && carries_l3(m_file, *st)) {
        bridge_now = l3_of(m_file, *st);
    }
    const bool gw_here = want_gw && want_gw->ifupdown_family() == family;
    if (want && want->address.ifupdown_family() == family) {
        return l3_from_address(family, *want, sources, bridge_now);
    }
    if (sources.size() > 1) {
        std::string names;
        for (const auto* s : sources) {
            names += (names.empty() ? "" : " and ") + s->owner;
        }
        refuse(names + " each carry an " + family + " configuration; a bridge can take only one",
               "give --address (and --gateway) for " + m_spec.bridge + ", or remove the extra one");
        return false;
    }
    if (sources.size() == 1) {
        return l3_moved_from_member(family, *sources[0], bridge_now, gw_here);
    }
    if (gw_here) {
        if (!bridge_now || bridge_now->method != "static") {
            refuse("--gateway needs a static address on " + m_spec.bridge + ", which has none", "give --address too");
            return false;
        }
        L3Config l3 = *bridge_now;
        set_gateway(l3, *m_spec.gateway);
        if (!check_gateway_against(l3)) {
            return false;
        }
        m_bridge_l3[family] = l3;
    }
    return true;
}

// --address for this family: the members' configurations are dropped; the
// gateway comes from --gateway, else the bridge, else a member.
bool Editor::l3_from_address(const std::string& family, const Cidr& want, const std::vector<const L3Config*>& sources,
                             const std::optional<L3Config>& bridge_now)
{
    L3Config l3{m_spec.bridge, family, "static", {{"address", *m_spec.address}}};
    std::optional<std::string> gateway = m_spec.gateway;
    std::string gateway_origin = "--gateway";
    if (!gateway && bridge_now && bridge_now->get("gateway")) {
        gateway = bridge_now->get("gateway");
        gateway_origin = m_spec.bridge;
    }
    for (const auto* s : sources) {
        if (!gateway && s->get("gateway")) {
            gateway = s->get("gateway");
            gateway_origin = s->owner;
        }
        const auto old = s->get("address");
        if (old != m_spec.address) {
            m_out.warnings.push_back(s->owner + ": its " + family + " " + s->method
                                     + (old ? " address " + *old : std::string(" configuration")) + " is removed; " + m_spec.bridge
                                     + " gets --address " + *m_spec.address);
        }
    }
    if (gateway) {
        const auto gw = parse_ip(*gateway);
        if (!gw || !in_subnet(want, *gw)) {
            refuse("gateway " + *gateway + " (from " + gateway_origin + ") is not inside --address " + *m_spec.address,
                   "give --gateway with an address inside that subnet");
            return false;
        }
        l3.options.emplace_back("gateway", *gateway);
    }
    m_bridge_l3[family] = l3;
    return true;
}

// The one member (or bond) with a configuration of this family hands it to the bridge.
bool Editor::l3_moved_from_member(const std::string& family, const L3Config& source, const std::optional<L3Config>& bridge_now,
                                  bool gw_here)
{
    if (bridge_now) {
        refuse(m_spec.bridge + " and " + source.owner + " both carry an " + family + " configuration; " + source.owner
                   + " becomes a bond member and cannot keep it",
               "remove it from " + source.owner + " or give --address for " + m_spec.bridge);
        return false;
    }
    L3Config moved = source;
    moved.owner = m_spec.bridge;
    if (gw_here) {
        set_gateway(moved, *m_spec.gateway);
        if (!check_gateway_against(moved)) {
            return false;
        }
    }
    m_moved_from[family] = source.owner;
    m_bridge_l3[family] = moved;
    return true;
}

// Replaces the gateway option in place, or adds it last.
void Editor::set_gateway(L3Config& l3, const std::string& gateway)
{
    auto it = std::find_if(l3.options.begin(), l3.options.end(), [](const auto& kv) { return kv.first == "gateway"; });
    if (it != l3.options.end()) {
        it->second = gateway;
    } else {
        l3.options.emplace_back("gateway", gateway);
    }
}

// A second default route in the same family would fight the first.
void Editor::refuse_second_gateway()
{
    if (!m_spec.gateway) {
        return;
    }
    const auto gw = parse_ip(*m_spec.gateway);
    for (const auto& st : m_file.stanzas()) {
        if (gw && st.family == gw->ifupdown_family() && st.name != m_spec.bridge && !contains_word(m_spec.slaves, st.name)
            && st.name != m_spec.bond && m_file.find_option(st, "gateway")) {
            refuse(st.name + " already has a gateway; a second default route would conflict",
                   "remove the gateway of " + st.name + " or leave out --gateway");
        }
    }
}

bool Editor::check_gateway_against(const L3Config& l3)
{
    const auto address = l3.get("address");
    const auto gateway = l3.get("gateway");
    if (!address || !gateway) {
        return true;
    }
    const auto cidr = parse_cidr(*address);
    const auto gw = parse_ip(*gateway);
    if (cidr && gw && !in_subnet(*cidr, *gw)) {
        refuse("gateway " + *gateway + " is not inside " + m_spec.bridge + "'s address " + *address,
               "give a --gateway inside that subnet, or --address");
        return false;
    }
    return true;
}

} // namespace passthru::plan::detail
