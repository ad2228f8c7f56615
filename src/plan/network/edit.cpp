// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/network/edit.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "plan/network/address.hpp"

namespace passthru::plan {

namespace {

using format::IfaceStanza;
using format::IfLineKind;
using format::InterfacesFile;
using format::OptionPlace;

// Options that give an interface layer-3 configuration (ifupdown2 address,
// dhcp and resolvconf addons). They belong on the bridge, never on a port.
const std::vector<std::string> k_l3_keys{"address", "netmask", "broadcast",       "network",    "gateway",    "pointopoint",
                                         "scope",   "metric",  "dns-nameservers", "dns-search", "dns-domain", "hostname"};

bool is_l3_key(std::string_view key)
{
    return std::find(k_l3_keys.begin(), k_l3_keys.end(), key) != k_l3_keys.end();
}

bool contains(const std::vector<std::string>& v, std::string_view s)
{
    return std::find(v.begin(), v.end(), s) != v.end();
}

std::vector<std::string> option_words(const InterfacesFile& file, const IfaceStanza& stanza, std::string_view key)
{
    std::vector<std::string> out;
    for (const std::size_t index : stanza.options) {
        const auto& line = file.lines()[index];
        if (line.keyword() == key) {
            out.insert(out.end(), line.words.begin() + 1, line.words.end());
        }
    }
    return out;
}

std::vector<std::string> bond_members(const InterfacesFile& file, const IfaceStanza& stanza)
{
    auto out = option_words(file, stanza, "bond-slaves");
    auto alias = option_words(file, stanza, "bond-ports");
    out.insert(out.end(), alias.begin(), alias.end());
    return out;
}

// An address (or DHCP) configuration that one stanza carries.
struct L3Config
{
    std::string owner;
    std::string family;
    std::string method;
    std::vector<std::pair<std::string, std::string>> options;

    std::optional<std::string> get(std::string_view key) const
    {
        for (const auto& [k, v] : options) {
            if (k == key) {
                return v;
            }
        }
        return std::nullopt;
    }
};

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
        const bool own_auto = prev.kind == IfLineKind::auto_ && contains(prev.words, stanza.name);
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

class Editor
{
public:
    Editor(const InterfacesFile& current, const BondBridgeSpec& spec) : m_file(current), m_spec(spec)
    {
        m_indent = m_file.option_indent();
        m_eol = std::string(m_file.eol());
    }

    NetworkEdit run()
    {
        const std::string before = m_file.text();
        check_conflicts();
        if (m_out.refusals.empty()) {
            collect_sources();
        }
        if (m_out.refusals.empty()) {
            plan_bridge_l3();
        }
        if (!m_out.refusals.empty()) {
            m_out.text = before;
            return std::move(m_out);
        }
        edit_members();
        edit_bond();
        edit_bridge();
        insert_new_blocks();
        m_out.text = m_file.text();
        m_out.changed = m_out.text != before;
        if (m_out.changed) {
            m_out.touched = m_spec.slaves;
            m_out.touched.push_back(m_spec.bond);
            m_out.touched.push_back(m_spec.bridge);
        }
        return std::move(m_out);
    }

private:
    void refuse(std::string message, std::string hint = {})
    {
        for (const auto& r : m_out.refusals) {
            if (r.message == message) {
                return;
            }
        }
        Refusal r{std::move(message), {}};
        if (!hint.empty()) {
            r.hints.push_back(std::move(hint));
        }
        m_out.refusals.push_back(std::move(r));
    }
    void reason(std::string text) { m_out.reasons.push_back(std::move(text)); }

    void check_conflicts()
    {
        for (const auto& st : m_file.stanzas()) {
            const auto ports = option_words(m_file, st, "bridge-ports");
            const auto members = bond_members(m_file, st);
            const auto raw_device = m_file.option(st, "vlan-raw-device");
            if (st.name != m_spec.bridge) {
                for (const auto& nic : m_spec.slaves) {
                    if (contains(ports, nic)) {
                        refuse(nic + " is a port of bridge " + st.name + " (line " + std::to_string(m_file.lines()[st.header].line_number)
                                   + ")",
                               "take it out of " + st.name + " first, or bond it under --bridge " + st.name);
                    }
                }
                if (contains(ports, m_spec.bond)) {
                    refuse(m_spec.bond + " is already a port of bridge " + st.name, "use --bridge " + st.name + " or another --bond-name");
                }
            }
            if (st.name != m_spec.bond) {
                for (const auto& nic : m_spec.slaves) {
                    if (contains(members, nic)) {
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

    void collect_sources()
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
    void plan_bridge_l3()
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
    bool plan_family_l3(const std::string& family, const std::optional<Cidr>& want, const std::optional<IpAddress>& want_gw)
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
    bool l3_from_address(const std::string& family, const Cidr& want, const std::vector<const L3Config*>& sources,
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
    bool l3_moved_from_member(const std::string& family, const L3Config& source, const std::optional<L3Config>& bridge_now, bool gw_here)
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
    static void set_gateway(L3Config& l3, const std::string& gateway)
    {
        auto it = std::find_if(l3.options.begin(), l3.options.end(), [](const auto& kv) { return kv.first == "gateway"; });
        if (it != l3.options.end()) {
            it->second = gateway;
        } else {
            l3.options.emplace_back("gateway", gateway);
        }
    }

    // A second default route in the same family would fight the first.
    void refuse_second_gateway()
    {
        if (!m_spec.gateway) {
            return;
        }
        const auto gw = parse_ip(*m_spec.gateway);
        for (const auto& st : m_file.stanzas()) {
            if (gw && st.family == gw->ifupdown_family() && st.name != m_spec.bridge && !contains(m_spec.slaves, st.name)
                && st.name != m_spec.bond && m_file.find_option(st, "gateway")) {
                refuse(st.name + " already has a gateway; a second default route would conflict",
                       "remove the gateway of " + st.name + " or leave out --gateway");
            }
        }
    }

    bool check_gateway_against(const L3Config& l3)
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

    // The NICs (and the bond) lose their address options and become manual.
    void edit_members()
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

    void ensure_auto(const std::string& name)
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

    void edit_bond()
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

    void apply_bridge_l3(const std::string& family, const L3Config& l3)
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

    std::string new_stanza_text(const std::string& family, const L3Config* l3, bool with_bridge_options)
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

    void edit_bridge()
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
    void add_new_bridge()
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
    void set_bridge_ports(const std::string& family, const IfaceStanza& st)
    {
        const auto old_ports = option_words(m_file, st, "bridge-ports");
        std::vector<std::string> ports;
        for (const auto& p : old_ports) {
            if (p == "none") {
                continue;
            }
            const std::string mapped = contains(m_spec.slaves, p) ? m_spec.bond : p;
            if (!contains(ports, mapped)) {
                ports.push_back(mapped);
            }
        }
        if (!contains(ports, m_spec.bond)) {
            ports.push_back(m_spec.bond);
        }
        if (m_file.set_option(m_spec.bridge, family, "bridge-ports", format::join_words(ports))) {
            reason(m_spec.bridge + ": bridge-ports " + (old_ports.empty() ? "(none)" : format::join_words(old_ports)) + " -> "
                   + format::join_words(ports));
        }
    }

    // bridge-stp off and bridge-fd 0 when missing, as Proxmox VE writes them.
    void ensure_stp_and_fd(const std::string& family)
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

    void set_vlan_awareness(const std::string& family)
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
    void add_bridge_family_stanza(const std::string& fam, const L3Config& l3)
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

    void insert_new_blocks()
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

    InterfacesFile m_file;
    const BondBridgeSpec& m_spec;
    std::string m_indent;
    std::string m_eol;
    NetworkEdit m_out;
    std::vector<L3Config> m_sources;
    std::map<std::string, L3Config> m_bridge_l3;     // family -> what the bridge carries afterwards
    std::map<std::string, std::string> m_moved_from; // family -> interface the address moved from
    std::string m_new_blocks;                        // new stanzas, inserted before the bridge
};

} // namespace

bool bond_mode_uses_xmit_hash_policy(std::string_view mode)
{
    return mode == "balance-xor" || mode == "802.3ad";
}

NetworkEdit edit_bond_bridge(const format::InterfacesFile& current, const BondBridgeSpec& spec)
{
    return Editor(current, spec).run();
}

} // namespace passthru::plan
