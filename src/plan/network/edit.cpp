// SPDX-License-Identifier: GPL-2.0-or-later
// The bond/bridge editor (plan/network/edit_detail.hpp): the helpers its parts share, its
// run from checks to edits, and the public entry points of edit.hpp. The checks and
// the address decisions are in edit_l3.cpp, the edits of the file in edit_stanzas.cpp.
#include "plan/network/edit.hpp"

#include <algorithm>
#include <utility>

#include "plan/network/edit_detail.hpp"

namespace passthru::plan::detail {

namespace {

using format::IfaceStanza;
using format::InterfacesFile;

} // namespace

// Options that give an interface layer-3 configuration (ifupdown2 address,
// dhcp and resolvconf addons). They belong on the bridge, never on a port.
const std::vector<std::string> k_l3_keys{"address", "netmask", "broadcast",       "network",    "gateway",    "pointopoint",
                                         "scope",   "metric",  "dns-nameservers", "dns-search", "dns-domain", "hostname"};

bool contains_word(const std::vector<std::string>& v, std::string_view s)
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

Editor::Editor(const InterfacesFile& current, const BondBridgeSpec& spec) : m_file(current), m_spec(spec)
{
    m_indent = m_file.option_indent();
    m_eol = std::string(m_file.eol());
}

NetworkEdit Editor::run()
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

void Editor::refuse(std::string message, std::string hint)
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

void Editor::reason(std::string text)
{
    m_out.reasons.push_back(std::move(text));
}

} // namespace passthru::plan::detail

namespace passthru::plan {

bool bond_mode_uses_xmit_hash_policy(std::string_view mode)
{
    return mode == "balance-xor" || mode == "802.3ad";
}

NetworkEdit edit_bond_bridge(const format::InterfacesFile& current, const BondBridgeSpec& spec)
{
    return detail::Editor(current, spec).run();
}

} // namespace passthru::plan
