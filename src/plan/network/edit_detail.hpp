// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to plan/network/: the bond/bridge editor behind edit_bond_bridge
// (edit.hpp). Its run and the helpers its parts share are in edit.cpp, the
// conflicts and the address decisions in edit_l3.cpp, the edits of the file in
// edit_stanzas.cpp. Not a public interface.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/interfaces.hpp"
#include "plan/network/address.hpp"
#include "plan/network/edit.hpp"

namespace passthru::plan::detail {

// The options that give an interface layer-3 configuration (edit.cpp).
extern const std::vector<std::string> k_l3_keys;

bool contains_word(const std::vector<std::string>& v, std::string_view s);
std::vector<std::string> option_words(const format::InterfacesFile& file, const format::IfaceStanza& stanza, std::string_view key);
std::vector<std::string> bond_members(const format::InterfacesFile& file, const format::IfaceStanza& stanza);

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

class Editor
{
public:
    Editor(const format::InterfacesFile& current, const BondBridgeSpec& spec);

    NetworkEdit run();

private:
    void refuse(std::string message, std::string hint = {});
    void reason(std::string text);

    // edit_l3.cpp: the conflicts, and what the bridge carries per family
    void check_conflicts();
    void collect_sources();
    void plan_bridge_l3();
    bool plan_family_l3(const std::string& family, const std::optional<Cidr>& want, const std::optional<IpAddress>& want_gw);
    bool l3_from_address(const std::string& family, const Cidr& want, const std::vector<const L3Config*>& sources,
                         const std::optional<L3Config>& bridge_now);
    bool l3_moved_from_member(const std::string& family, const L3Config& source, const std::optional<L3Config>& bridge_now, bool gw_here);
    static void set_gateway(L3Config& l3, const std::string& gateway);
    void refuse_second_gateway();
    bool check_gateway_against(const L3Config& l3);

    // edit_stanzas.cpp: the edits of the file
    void edit_members();
    void ensure_auto(const std::string& name);
    void edit_bond();
    void apply_bridge_l3(const std::string& family, const L3Config& l3);
    std::string new_stanza_text(const std::string& family, const L3Config* l3, bool with_bridge_options);
    void edit_bridge();
    void add_new_bridge();
    void set_bridge_ports(const std::string& family, const format::IfaceStanza& st);
    void ensure_stp_and_fd(const std::string& family);
    void set_vlan_awareness(const std::string& family);
    void add_bridge_family_stanza(const std::string& fam, const L3Config& l3);
    void insert_new_blocks();

    format::InterfacesFile m_file;
    const BondBridgeSpec& m_spec;
    std::string m_indent;
    std::string m_eol;
    NetworkEdit m_out;
    std::vector<L3Config> m_sources;
    std::map<std::string, L3Config> m_bridge_l3;     // family -> what the bridge carries afterwards
    std::map<std::string, std::string> m_moved_from; // family -> interface the address moved from
    std::string m_new_blocks;                        // new stanzas, inserted before the bridge
};

} // namespace passthru::plan::detail
