// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/network/pinning.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

#include "format/interfaces.hpp"
#include "util/strings.hpp"

namespace passthru::plan {

namespace {

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

bool is_mac(const std::string& s)
{
    if (s.size() != 17) {
        return false;
    }
    for (std::size_t i = 0; i < s.size(); ++i) {
        const bool colon = i % 3 == 2;
        if (colon ? s[i] != ':' : std::isxdigit(static_cast<unsigned char>(s[i])) == 0) {
            return false;
        }
    }
    return true;
}

// The .link file as Proxmox's tool reads it (pve-manager
// PVE/CLI/pve_network_interface_pinning.pm, parse_link_file): blank and
// comment (# ;) lines skipped, [Match] and [Link] sections, Key=Value lines;
// anything else is an error there too. Returns an error text or empty.
std::string parse_link(const std::string& text, PinnedNic& out)
{
    std::string section;
    for (const auto& raw : util::split_lines(text)) {
        const std::string line(util::trim(raw));
        if (line.empty() || line[0] == '#' || line[0] == ';') {
            continue;
        }
        if (line == "[Match]" || line == "[Link]") {
            section = line;
            continue;
        }
        const auto eq = line.find('=');
        if (eq == std::string::npos || eq == 0 || section.empty()) {
            return "unrecognized line '" + line + "'";
        }
        const std::string key = line.substr(0, eq);
        const std::string value(util::trim(line.substr(eq + 1)));
        if (section == "[Match]" && key == "MACAddress") {
            out.mac = lower(value);
        } else if (section == "[Link]" && key == "Name") {
            out.name = value;
        }
    }
    if (!is_mac(out.mac)) {
        return "no [Match] MACAddress= with one MAC address";
    }
    if (out.name.empty()) {
        return "no [Link] Name=";
    }
    return {};
}

// A physical NIC as the pinning tool sees it: a PCI network function that is
// not an SR-IOV VF, with the MAC it matches on.
struct Nic
{
    std::string name;
    std::string perm_mac;
    std::optional<int> ifindex;
    scan::PciAddress address;
};

std::vector<Nic> physical_nics(const scan::Inventory& inventory)
{
    std::vector<Nic> out;
    for (const auto& dev : inventory.devices) {
        if (!dev.is_network() || dev.is_virtfn) {
            continue;
        }
        for (const auto& link : dev.net_links) {
            if (!link.perm_mac.empty()) {
                out.push_back({link.name, link.perm_mac, link.ifindex, dev.address});
            }
        }
    }
    // The tool numbers NICs in ifindex order; without an ifindex (a tree
    // without it) PCI order, the order the kernel probes and numbers them in.
    std::sort(out.begin(), out.end(), [](const Nic& a, const Nic& b) {
        return std::make_tuple(!a.ifindex.has_value(), a.ifindex.value_or(0), a.address, a.name)
               < std::make_tuple(!b.ifindex.has_value(), b.ifindex.value_or(0), b.address, b.name);
    });
    return out;
}

const PinnedNic* pin_by_mac(const std::vector<PinnedNic>& pins, const std::string& mac)
{
    const auto it = std::find_if(pins.begin(), pins.end(), [&](const PinnedNic& p) { return p.mac == mac; });
    return it == pins.end() ? nullptr : &*it;
}

const PinnedNic* pin_by_name(const std::vector<PinnedNic>& pins, const std::string& name)
{
    const auto it = std::find_if(pins.begin(), pins.end(), [&](const PinnedNic& p) { return p.name == name; });
    return it == pins.end() ? nullptr : &*it;
}

// "enp66s0f0" -> renamed; "enp66s0f0.10" / "enp66s0f0:1" keep their suffix (as the tool's mapping does).
std::string renamed(const std::string& word, const std::map<std::string, std::string>& rename)
{
    const auto dot = word.find_first_of(".:");
    const std::string base = word.substr(0, dot);
    const auto it = rename.find(base);
    if (it == rename.end()) {
        return word;
    }
    return it->second + (dot == std::string::npos ? std::string() : word.substr(dot));
}

} // namespace

std::vector<PinnedNic> read_pinned_nics(const util::HostFs& fs, std::vector<std::string>& warnings)
{
    std::vector<PinnedNic> out;
    const std::string dir(k_systemd_network_d.dir);
    auto names = fs.list_dir(dir);
    if (!names) {
        return out;
    }
    std::sort(names->begin(), names->end());
    for (const auto& name : *names) {
        if (!(name.starts_with("50-pmx-") || name.starts_with("50-pve-")) || !name.ends_with(".link")) {
            continue;
        }
        const std::string path = dir + "/" + name;
        const auto text = fs.read_file(path);
        if (!text) {
            continue;
        }
        PinnedNic nic;
        nic.file = path;
        if (const auto error = parse_link(*text, nic); !error.empty()) {
            warnings.push_back(path + ": " + error + "; passthru does not count the name it pins");
            continue;
        }
        out.push_back(std::move(nic));
    }
    return out;
}

std::string link_file_text(std::string_view mac, std::string_view name)
{
    return "[Match]\nMACAddress=" + std::string(mac) + "\nType=ether\n\n[Link]\nName=" + std::string(name) + "\n";
}

PinChange plan_pins(const scan::Inventory& inventory, const std::vector<PinnedNic>& pins)
{
    PinChange change;
    std::set<std::string> taken;
    for (const auto& p : pins) {
        taken.insert(p.name);
    }
    int index = 0;
    for (const auto& nic : physical_nics(inventory)) {
        if (pin_by_mac(pins, nic.perm_mac) != nullptr || pin_by_name(pins, nic.name) != nullptr) {
            continue; // pinned already
        }
        std::string name;
        do {
            name = std::string(k_pin_prefix) + std::to_string(index++);
        } while (taken.count(name) != 0U);
        taken.insert(name);
        change.rename[nic.name] = name;
        const std::string path = k_systemd_network_d.file("50-pmx-" + name + ".link");
        change.files[path] = link_file_text(nic.perm_mac, name);
        change.why[path] = "--pin-nics: pins " + nic.name + " (" + nic.address.str() + ", permanent MAC " + nic.perm_mac + ") as " + name
                           + ", the file pve-network-interface-pinning writes: systemd names the NIC by its MAC from the next boot "
                             "on, so an upgrade or a card added in front of it no longer renames it";
    }
    return change;
}

std::string rename_nics(std::string_view text, const std::map<std::string, std::string>& rename)
{
    static const std::set<std::string> k_list_keys{"bond-slaves",  "bond_slaves",  "slaves",          "bridge-ports",   "bridge_ports",
                                                   "bond-primary", "bond_primary", "vlan-raw-device", "vlan_raw_device"};
    auto file = format::InterfacesFile::parse(text);
    for (std::size_t i = 0; i < file.lines().size(); ++i) {
        const auto& line = file.lines()[i];
        using format::IfLineKind;
        const bool names_ifaces = line.kind == IfLineKind::auto_ || line.kind == IfLineKind::allow || line.kind == IfLineKind::iface
                                  || line.kind == IfLineKind::no_auto_down || line.kind == IfLineKind::no_scripts;
        const bool lists_ifaces = line.kind == IfLineKind::option && k_list_keys.count(std::string(line.keyword())) != 0U;
        if (!names_ifaces && !lists_ifaces) {
            continue;
        }
        std::vector<std::string> words = line.words;
        const std::size_t last = line.kind == IfLineKind::iface ? std::min<std::size_t>(words.size(), 2) : words.size();
        bool changed = false;
        for (std::size_t w = 1; w < last; ++w) {
            const std::string to = renamed(words[w], rename);
            changed = changed || to != words[w];
            words[w] = to;
        }
        if (changed) {
            file.rewrite_line(i, words);
        }
    }
    return file.text();
}

std::map<std::string, std::string> pending_pins(const scan::Inventory& inventory, const std::vector<PinnedNic>& pins)
{
    std::map<std::string, std::string> out;
    const auto nics = physical_nics(inventory);
    for (const auto& pin : pins) {
        const auto nic = std::find_if(nics.begin(), nics.end(), [&](const Nic& n) { return n.perm_mac == pin.mac; });
        if (nic != nics.end() && nic->name != pin.name) {
            out[pin.name] = nic->name;
        }
    }
    return out;
}

void check_bond_pinning(const PlanContext& ctx, const std::vector<std::string>& slaves, const std::vector<PinnedNic>& pins,
                        bool pinning_now, Plan& plan)
{
    const auto version = ctx.inventory.host.pve_version ? util::major_minor(*ctx.inventory.host.pve_version) : std::nullopt;
    const bool pve9 = version && version->first >= 9;
    const auto nics = physical_nics(ctx.inventory);
    std::vector<std::string> unpinned;
    for (const auto& name : slaves) {
        if (const auto* pin = pin_by_name(pins, name)) {
            plan.notes.push_back("network: bond member " + name + " is a pinned name (" + pin->file + ", MAC " + pin->mac
                                 + "): it stays with that NIC across upgrades and hardware changes");
            continue;
        }
        const auto nic = std::find_if(nics.begin(), nics.end(), [&](const Nic& n) { return n.name == name; });
        if (nic == nics.end()) {
            continue;
        }
        if (const auto* pin = pin_by_mac(pins, nic->perm_mac)) {
            plan.refusals.push_back({"bond member " + name + " is renamed " + pin->name + " at the next boot (" + pin->file
                                         + " pins its MAC " + pin->mac + "); a bond naming " + name
                                         + " would lose that NIC and the host could drop off the network",
                                     {"name the pinned name in --bond: " + pin->name}});
            continue;
        }
        unpinned.push_back(name);
    }
    if (pve9 && !unpinned.empty() && !pinning_now) {
        plan.warnings.push_back("bond member(s) " + util::join(unpinned, ", ") + " are the kernel's names, not pinned ones: on Proxmox VE "
                                + *ctx.inventory.host.pve_version
                                + " (Debian 13, systemd 257) a major upgrade, a new systemd naming scheme or a card added in front "
                                  "of the NIC can rename them, and the host drops off the network; add --pin-nics (or run "
                                  "pve-network-interface-pinning generate and reboot) and name the pinned names in --bond");
    }
}

} // namespace passthru::plan
