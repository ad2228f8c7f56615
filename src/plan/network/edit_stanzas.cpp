// SPDX-License-Identifier: GPL-2.0-or-later
// The bond/bridge editor's edits of the file (plan/network/edit_detail.hpp): the members
// become manual, the bond and the bridge are written or changed, and new stanzas
// go in before the bridge (docs/network.md).
#include <optional>
#include <string>
#include <vector>

#include "plan/network/edit_detail.hpp"

namespace passthru::plan::detail {

namespace {

using format::IfaceStanza;
using format::IfLineKind;
using format::InterfacesFile;
using format::OptionPlace;

// Prefers the inet stanza: bridge and bond options live there.
std::optional<IfaceStanza> main_stanza(const InterfacesFile& file, std::string_view name)
{
    if (auto inet = file.find(name, "inet")) {
        return inet;
    }
    auto all = file.find(name);
    if (all.empty()) {
        return std::nullopt;
    }
    return all.front();
}

// First line of a stanza's block: its header plus the auto line and
// comments directly above it.
std::size_t block_start(const InterfacesFile& file, const IfaceStanza& stanza)
{
    std::size_t i = stanza.header;
    while (i > 0) {
        const auto& prev = file.lines()[i - 1];
        const bool own_auto = prev.kind == IfLineKind::auto_ && contains_word(prev.words, stanza.name);
        if (!own_auto && prev.kind != IfLineKind::comment) {
            break;
        }
        --i;
    }
    return i;
}

// Where new stanzas go when there is no bridge to put them before: ahead
// of the trailing `source` lines (PVE keeps them last), else at the end.
std::size_t tail_position(const InterfacesFile& file)
{
    const auto& lines = file.lines();
    std::size_t last = lines.size();
    while (last > 0 && lines[last - 1].kind == IfLineKind::blank) {
        --last;
    }
    if (last == 0) {
        return lines.size();
    }
    const IfLineKind kind = lines[last - 1].kind;
    if (kind != IfLineKind::source && kind != IfLineKind::source_directory) {
        return lines.size();
    }
    std::size_t start = last - 1;
    while (start > 0) {
        const IfLineKind k = lines[start - 1].kind;
        if (k != IfLineKind::source && k != IfLineKind::source_directory && k != IfLineKind::blank && k != IfLineKind::comment) {
            break;
        }
        --start;
    }
    if (start < lines.size() && lines[start].kind == IfLineKind::blank) {
        ++start; // keep one blank line between the last stanza and the new ones
    }
    return start;
}

} // namespace

// The NICs (and the bond) lose their address options and become manual.
void Editor::edit_members()
{
    std::vector<std::string> names = m_spec.slaves;
    names.push_back(m_spec.bond);
    for (const auto& name : names) {
        for (const auto& st : m_file.find(name)) {
            bool dropped = false;
            for (const auto& key : k_l3_keys) {
                dropped = m_file.remove_option(name, st.family, key) || dropped;
            }
            const bool remethod = m_file.set_method(name, st.family, "manual");
            if (dropped || remethod) {
                std::string what = name == m_spec.bond ? "the bond" : "a bond member";
                std::string msg = name + ": iface " + st.family + " " + st.method + " becomes manual";
                if (dropped) {
                    auto it = m_moved_from.find(st.family);
                    const bool moved = it != m_moved_from.end() && it->second == name;
                    msg += moved ? ", its address options move to " + m_spec.bridge : ", its address options are removed";
                }
                reason(msg + " (" + what + " carries no address; the bridge does)");
            }
        }
    }
}

void Editor::ensure_auto(const std::string& name)
{
    if (m_file.is_auto(name)) {
        return;
    }
    auto st = main_stanza(m_file, name);
    if (!st) {
        return;
    }
    m_file.insert_text(st->header, "auto " + name + m_eol);
    reason("auto " + name + " added so it comes up at boot");
}

void Editor::edit_bond()
{
    std::string missing_members;
    for (const auto& nic : m_spec.slaves) {
        if (m_file.find(nic).empty()) {
            missing_members += "iface " + nic + " inet manual" + m_eol + m_eol;
            reason(nic + ": stanza 'iface " + nic + " inet manual' added (bond member)");
        }
    }
    m_new_blocks += missing_members;

    const bool use_policy = bond_mode_uses_xmit_hash_policy(m_spec.mode);
    if (m_spec.xmit_hash_policy && !use_policy) {
        m_out.warnings.push_back("--bond-xmit-hash-policy " + *m_spec.xmit_hash_policy + " is ignored with bond-mode " + m_spec.mode
                                 + ": Proxmox VE writes bond-xmit-hash-policy only for balance-xor and 802.3ad, so "
                                   "it is left out");
    }
    const std::string slaves = format::join_words(m_spec.slaves);
    auto st = main_stanza(m_file, m_spec.bond);
    if (!st) {
        std::string block = "auto " + m_spec.bond + m_eol + "iface " + m_spec.bond + " inet manual" + m_eol;
        block += m_indent + "bond-slaves " + slaves + m_eol;
        block += m_indent + "bond-miimon 100" + m_eol;
        block += m_indent + "bond-mode " + m_spec.mode + m_eol;
        if (use_policy && m_spec.xmit_hash_policy) {
            block += m_indent + "bond-xmit-hash-policy " + *m_spec.xmit_hash_policy + m_eol;
        }
        m_new_blocks += block + m_eol;
        reason(m_spec.bond + ": new bond of " + slaves + ", mode " + m_spec.mode
               + (use_policy && m_spec.xmit_hash_policy ? ", xmit hash " + *m_spec.xmit_hash_policy : "")
               + ", link monitoring every 100 ms");
        return;
    }
    const std::string family = st->family;
    const auto old_members = bond_members(m_file, *st);
    if (m_file.remove_option(m_spec.bond, family, "bond-ports")) {
        reason(m_spec.bond + ": bond-ports replaced by bond-slaves (Proxmox VE does not read bond-ports)");
    }
    if (m_file.set_option(m_spec.bond, family, "bond-slaves", slaves)) {
        reason(m_spec.bond + ": members " + (old_members.empty() ? "(none)" : format::join_words(old_members)) + " -> " + slaves);
    }
    if (!m_file.option(*main_stanza(m_file, m_spec.bond), "bond-miimon")) {
        m_file.set_option(m_spec.bond, family, "bond-miimon", "100");
        reason(m_spec.bond + ": bond-miimon 100 added (link monitoring)");
    }
    const auto old_mode = m_file.option(*main_stanza(m_file, m_spec.bond), "bond-mode");
    if (m_file.set_option(m_spec.bond, family, "bond-mode", m_spec.mode)) {
        reason(m_spec.bond + ": bond-mode " + old_mode.value_or("(default balance-rr)") + " -> " + m_spec.mode);
    }
    if (use_policy && m_spec.xmit_hash_policy) {
        if (m_file.set_option(m_spec.bond, family, "bond-xmit-hash-policy", *m_spec.xmit_hash_policy)) {
            reason(m_spec.bond + ": bond-xmit-hash-policy " + *m_spec.xmit_hash_policy);
        }
    } else if (!use_policy && m_file.remove_option(m_spec.bond, family, "bond-xmit-hash-policy")) {
        reason(m_spec.bond + ": bond-xmit-hash-policy removed (used only by balance-xor and 802.3ad)");
    }
    ensure_auto(m_spec.bond);
}

void Editor::apply_bridge_l3(const std::string& family, const L3Config& l3)
{
    const auto st = m_file.find(m_spec.bridge, family);
    if (!st) {
        return;
    }
    const std::string old_method = st->method;
    if (m_file.set_method(m_spec.bridge, family, l3.method)) {
        reason(m_spec.bridge + ": iface " + family + " " + old_method + " -> " + l3.method);
    }
    // Keys the new configuration does not have are dropped (a netmask
    // line next to a CIDR address, say), except resolver settings.
    for (const auto& key : k_l3_keys) {
        if (!l3.get(key) && key.rfind("dns-", 0) != 0) {
            if (m_file.remove_option(m_spec.bridge, family, key)) {
                reason(m_spec.bridge + ": " + key + " removed");
            }
        }
    }
    // Reverse order with OptionPlace::first keeps them in order at the top.
    for (auto it = l3.options.rbegin(); it != l3.options.rend(); ++it) {
        const auto old = m_file.option(*m_file.find(m_spec.bridge, family), it->first);
        if (m_file.set_option(m_spec.bridge, family, it->first, it->second, OptionPlace::first)) {
            reason(m_spec.bridge + ": " + it->first + " " + (old ? *old + " -> " : std::string()) + it->second);
        }
    }
}

std::string Editor::new_stanza_text(const std::string& family, const L3Config* l3, bool with_bridge_options)
{
    std::string text = "iface " + m_spec.bridge + " " + family + " " + (l3 ? l3->method : "manual") + m_eol;
    if (l3) {
        for (const auto& [k, v] : l3->options) {
            text += m_indent + k + " " + v + m_eol;
        }
    }
    if (with_bridge_options) {
        text += m_indent + "bridge-ports " + m_spec.bond + m_eol;
        text += m_indent + "bridge-stp off" + m_eol;
        text += m_indent + "bridge-fd 0" + m_eol;
        if (m_spec.vlan_aware) {
            text += m_indent + "bridge-vlan-aware yes" + m_eol;
            text += m_indent + "bridge-vids 2-4094" + m_eol;
        }
    }
    return text + m_eol;
}

void Editor::edit_bridge()
{
    auto st = main_stanza(m_file, m_spec.bridge);
    if (!st) {
        add_new_bridge();
        return;
    }
    const std::string family = st->family;
    set_bridge_ports(family, *st);
    ensure_stp_and_fd(family);
    set_vlan_awareness(family);
    for (const auto& [fam, l3] : m_bridge_l3) {
        if (m_file.find(m_spec.bridge, fam)) {
            apply_bridge_l3(fam, l3);
        } else {
            add_bridge_family_stanza(fam, l3);
        }
    }
    ensure_auto(m_spec.bridge);
}

// No bridge of that name yet: a new block with its inet (and inet6) stanza.
void Editor::add_new_bridge()
{
    const L3Config* inet = m_bridge_l3.count("inet") ? &m_bridge_l3["inet"] : nullptr;
    std::string block = "auto " + m_spec.bridge + m_eol + new_stanza_text("inet", inet, true);
    if (m_bridge_l3.count("inet6")) {
        block += new_stanza_text("inet6", &m_bridge_l3["inet6"], false);
    }
    m_new_blocks += block;
    std::string what = m_spec.bridge + ": new bridge on " + m_spec.bond;
    for (const auto& [family, l3] : m_bridge_l3) {
        if (auto a = l3.get("address")) {
            what += ", " + family + " address " + *a;
        } else {
            what += ", " + family + " " + l3.method;
        }
        if (auto g = l3.get("gateway")) {
            what += " gateway " + *g;
        }
        if (auto it = m_moved_from.find(family); it != m_moved_from.end()) {
            what += " (moved from " + it->second + ")";
        }
    }
    reason(what + (m_spec.vlan_aware ? ", VLAN-aware (2-4094)" : ""));
}

// The bond replaces its members among the bridge's ports; other ports stay.
void Editor::set_bridge_ports(const std::string& family, const IfaceStanza& st)
{
    const auto old_ports = option_words(m_file, st, "bridge-ports");
    std::vector<std::string> ports;
    for (const auto& p : old_ports) {
        if (p == "none") {
            continue;
        }
        const std::string mapped = contains_word(m_spec.slaves, p) ? m_spec.bond : p;
        if (!contains_word(ports, mapped)) {
            ports.push_back(mapped);
        }
    }
    if (!contains_word(ports, m_spec.bond)) {
        ports.push_back(m_spec.bond);
    }
    if (m_file.set_option(m_spec.bridge, family, "bridge-ports", format::join_words(ports))) {
        reason(m_spec.bridge + ": bridge-ports " + (old_ports.empty() ? "(none)" : format::join_words(old_ports)) + " -> "
               + format::join_words(ports));
    }
}

// bridge-stp off and bridge-fd 0 when missing, as Proxmox VE writes them.
void Editor::ensure_stp_and_fd(const std::string& family)
{
    auto st = main_stanza(m_file, m_spec.bridge);
    if (!m_file.option(*st, "bridge-stp")) {
        m_file.set_option(m_spec.bridge, family, "bridge-stp", "off");
        reason(m_spec.bridge + ": bridge-stp off added (what Proxmox VE writes)");
    }
    st = main_stanza(m_file, m_spec.bridge);
    const auto stp = m_file.option(*st, "bridge-stp");
    const bool stp_on = stp == "on" || stp == "yes";
    if (!stp_on && !m_file.option(*st, "bridge-fd")) {
        m_file.set_option(m_spec.bridge, family, "bridge-fd", "0");
        reason(m_spec.bridge + ": bridge-fd 0 added (no forwarding delay without STP)");
    }
}

void Editor::set_vlan_awareness(const std::string& family)
{
    const auto st = main_stanza(m_file, m_spec.bridge);
    const auto vlan = m_file.option(*st, "bridge-vlan-aware");
    if (m_spec.vlan_aware) {
        if (m_file.set_option(m_spec.bridge, family, "bridge-vlan-aware", "yes")) {
            reason(m_spec.bridge + ": bridge-vlan-aware yes (--vlan-aware)");
        }
        if (!m_file.option(*main_stanza(m_file, m_spec.bridge), "bridge-vids")) {
            m_file.set_option(m_spec.bridge, family, "bridge-vids", "2-4094");
            reason(m_spec.bridge + ": bridge-vids 2-4094 (the VLANs the bridge passes)");
        }
    } else if (vlan && *vlan != "yes") {
        m_file.remove_option(m_spec.bridge, family, "bridge-vlan-aware");
        reason(m_spec.bridge + ": 'bridge-vlan-aware " + *vlan
               + "' removed: Proxmox VE reads any bridge-vlan-aware line as yes; without it the bridge is not "
                 "VLAN-aware for both ifupdown2 and Proxmox VE");
    }
}

// A family the bridge has no stanza for yet: a new stanza after its last one.
void Editor::add_bridge_family_stanza(const std::string& fam, const L3Config& l3)
{
    const auto all = m_file.find(m_spec.bridge);
    std::size_t pos = all.back().end;
    std::string text = new_stanza_text(fam, &l3, false);
    if (pos > 0 && m_file.lines()[pos - 1].kind != IfLineKind::blank) {
        text = m_eol + text;
        text.erase(text.size() - m_eol.size());
    }
    m_file.insert_text(pos, text);
    reason(m_spec.bridge + ": new iface " + fam + " " + l3.method + " stanza"
           + (m_moved_from.count(fam) ? " (moved from " + m_moved_from[fam] + ")" : ""));
}

void Editor::insert_new_blocks()
{
    if (m_new_blocks.empty()) {
        return;
    }
    std::size_t pos = 0;
    if (auto bridge = main_stanza(m_file, m_spec.bridge)) {
        pos = block_start(m_file, *bridge);
    } else {
        pos = tail_position(m_file);
    }
    std::string text = m_new_blocks;
    if (pos > 0 && m_file.lines()[pos - 1].kind != IfLineKind::blank) {
        text = m_eol + text;
    }
    if (pos >= m_file.lines().size()) {
        // At the very end: no trailing blank line.
        text.erase(text.size() - m_eol.size());
    }
    m_file.insert_text(pos, text);
}

} // namespace passthru::plan::detail
