// SPDX-License-Identifier: GPL-2.0-or-later
// plan_network: the bond/bridge part of a plan. Validates the
// request against the host, edits the interfaces file Proxmox VE reads
// (interfaces.new when it exists) and stages the result in interfaces.new,
// or, with --apply-network, puts it in place and runs ifreload -a the way
// PVE's "Apply Configuration" does, behind the lock-out guard.
#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <set>

#include "format/grammar.hpp"
#include "format/interfaces.hpp"
#include "plan/network/address.hpp"
#include "plan/network/edit.hpp"
#include "plan/network/pinning.hpp"
#include "plan/network/plan.hpp"
#include "plan/network/routes.hpp"
#include "plan/plan_detail.hpp"
#include "plan/planner.hpp"
#include "util/strings.hpp"

namespace passthru::plan {

namespace {

const std::vector<std::string> k_xmit_policies{"layer2", "layer2+3", "layer3+4", "encap2+3", "encap3+4"};

Error usage(const std::string& message, const std::string& hint = {})
{
    Error e(Errc::usage, message);
    if (!hint.empty()) {
        e.with_hint(hint);
    }
    return e;
}

// How far passthru follows `source` lines: ifupdown2 itself has no limit
// and dies of Python's recursion limit on a cycle (docs/facts.md: network),
// so a cycle, a deeper nesting or more files are refused.
constexpr std::size_t k_max_source_depth = 8;
constexpr std::size_t k_max_sourced_files = 256;

// The names ifupdown2 reads in a `source-directory` directory: letters,
// digits, '_' and '-' only (so no "x.bak", "x.dpkg-old" or dot files).
bool source_directory_name(std::string_view name)
{
    return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    });
}

// Names in `dir` matching the glob `pattern` (dot files only when the
// pattern names them, as Python's glob), sorted.
std::vector<std::string> glob_dir(const util::HostFs& fs, const std::string& dir, const std::string& pattern)
{
    std::vector<std::string> out;
    if (auto names = fs.list_dir(dir)) {
        for (const auto& n : *names) {
            if (::fnmatch(pattern.c_str(), n.c_str(), FNM_PERIOD) == 0) {
                out.push_back((dir == "/" ? "" : dir) + "/" + n);
            }
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

// Host paths one `source` (or `source-directory`) argument names, as
// ifupdown2 reads it: a glob (in the last component), files sorted; for a
// directory, its files with ifupdown2's names. ifupdown2 takes a relative
// path from its working directory: / when networking.service or Proxmox VE
// runs it, /etc/network for an admin there; both are read.
std::vector<std::string> expand_one_source(const util::HostFs& fs, const std::string& path, bool directory)
{
    std::vector<std::string> named;
    if (path.find_first_of("*?[") == std::string::npos) {
        if (fs.exists(path)) {
            named.push_back(path);
        }
    } else {
        named = glob_dir(fs, util::dir_name(path), std::string(util::base_name(path)));
    }
    if (!directory) {
        return named;
    }
    std::vector<std::string> out;
    for (const auto& dir : named) {
        for (const auto& file : glob_dir(fs, dir, "*")) {
            if (source_directory_name(util::base_name(file))) {
                out.push_back(file);
            }
        }
    }
    return out;
}

std::vector<std::string> expand_source(const util::HostFs& fs, const std::string& pattern, bool directory)
{
    if (pattern.empty() || pattern[0] == '/') {
        return expand_one_source(fs, pattern, directory);
    }
    std::vector<std::string> out = expand_one_source(fs, "/" + pattern, directory);
    for (auto& p : expand_one_source(fs, "/etc/network/" + pattern, directory)) {
        if (std::find(out.begin(), out.end(), p) == out.end()) {
            out.push_back(std::move(p));
        }
    }
    return out;
}

// A file sourced, directly or through other sourced files, by the base file.
struct SourcedFile
{
    std::string path;
    format::InterfacesFile file;
};

// Follows the `source` lines of `file` into the files they name and theirs
// in turn; `chain` holds the resolved paths from the base file down to
// `file`. A cycle or too deep or too many files: refused (and false).
bool follow_sources(const util::HostFs& fs, const format::InterfacesFile& file, std::vector<std::string>& chain,
                    std::vector<SourcedFile>& out, Plan& plan)
{
    for (const auto& line : file.lines()) {
        if ((line.kind != format::IfLineKind::source && line.kind != format::IfLineKind::source_directory) || line.words.size() < 2) {
            continue;
        }
        for (const auto& path : expand_source(fs, line.words[1], line.kind == format::IfLineKind::source_directory)) {
            const std::string real = fs.resolve(path).value_or(path);
            if (std::find(chain.begin(), chain.end(), real) != chain.end()) {
                plan.refusals.push_back({"the interfaces files source each other in a loop (" + util::join(chain, " -> ") + " -> " + real
                                             + "): ifupdown2 cannot read them",
                                         {"remove the `source` line that closes the loop, and plan again"}});
                return false;
            }
            if (chain.size() > k_max_source_depth || out.size() >= k_max_sourced_files) {
                plan.refusals.push_back({"the interfaces files source more than " + std::to_string(k_max_source_depth) + " levels deep or "
                                             + std::to_string(k_max_sourced_files) + " files (" + util::join(chain, " -> ") + " -> " + real
                                             + "); passthru does not follow them",
                                         {"flatten the `source` lines of " + chain.front() + ", and plan again"}});
                return false;
            }
            auto text = fs.read_file(path);
            if (!text) {
                continue; // ifupdown2 warns and goes on
            }
            out.push_back({path, format::InterfacesFile::parse(*text)});
            chain.push_back(real);
            const format::InterfacesFile sourced = out.back().file;
            const bool ok = follow_sources(fs, sourced, chain, out, plan);
            chain.pop_back();
            if (!ok) {
                return false;
            }
        }
    }
    return true;
}

// PCI network interfaces of the host, for hints: "eno1, enp66s0f0".
std::string known_pci_nics(const scan::Inventory& inventory, const std::map<std::string, scan::PciAddress>& nics)
{
    std::string known;
    for (const auto& [name, addr] : nics) {
        const auto* dev = inventory.find(addr);
        if (dev != nullptr && dev->is_network()) {
            known += (known.empty() ? "" : ", ") + name;
        }
    }
    return known;
}

// Each --bond member: named once, not the bond or bridge itself, and a NIC
// in /sys/class/net on a PCI network function.
void validate_bond_members(const NetworkRequest& net, const scan::Inventory& inventory, const util::HostFs& fs,
                           const std::map<std::string, scan::PciAddress>& nics)
{
    std::set<std::string> seen;
    for (const auto& nic : net.bond_slaves) {
        if (!seen.insert(nic).second) {
            throw usage("--bond names " + nic + " twice");
        }
        if (nic == net.bond_name || nic == net.bridge) {
            throw usage("--bond: " + nic + " cannot be a member of itself", "the bond members are NICs, e.g. --bond enp66s0f0,enp66s0f1");
        }
        const bool in_sysfs = fs.exists("/sys/class/net/" + nic);
        const auto it = nics.find(nic);
        const std::string known = known_pci_nics(inventory, nics);
        if (!in_sysfs || it == nics.end()) {
            throw usage("--bond: no network interface " + nic + " on this host",
                        known.empty() ? "this host shows no PCI network interfaces in /sys/class/net"
                                      : "PCI network interfaces here: " + known);
        }
        const auto* dev = inventory.find(it->second);
        if (dev == nullptr || !dev->is_network()) {
            throw usage("--bond: " + nic + " is not on a PCI network function (" + it->second.str() + ")",
                        known.empty() ? std::string() : "PCI network interfaces here: " + known);
        }
    }
}

// The bond and bridge names: distinct, not physical NICs; the hash policy is one ifupdown2 knows.
void validate_bond_names(const NetworkRequest& net, const std::map<std::string, scan::PciAddress>& nics)
{
    if (net.bond_name == net.bridge) {
        throw usage("--bond-name and --bridge are both " + net.bridge, "the bond goes under the bridge: --bond-name bond0 --bridge vmbr0");
    }
    for (const auto* name : {&net.bond_name, &net.bridge}) {
        if (nics.count(*name) != 0U) {
            throw usage(*name + " is a physical NIC; it cannot be the " + (name == &net.bridge ? "bridge" : "bond"));
        }
    }
    if (net.xmit_hash_policy && std::find(k_xmit_policies.begin(), k_xmit_policies.end(), *net.xmit_hash_policy) == k_xmit_policies.end()) {
        throw usage("--bond-xmit-hash-policy '" + *net.xmit_hash_policy + "' is not one of " + util::join(k_xmit_policies, ", "));
    }
}

// --address is a host address with a prefix; --gateway an address of the same family inside it.
void validate_addressing(const NetworkRequest& net)
{
    std::optional<Cidr> cidr;
    if (net.address) {
        cidr = parse_cidr(*net.address);
        if (!cidr) {
            throw usage("--address '" + *net.address + "' is not an address with a prefix length",
                        "e.g. --address 192.168.1.252/24 or --address fd00::2/64");
        }
        if (cidr->address.family == IpFamily::v4 && cidr->prefix <= 30) {
            if (network_of(*cidr) == cidr->address) {
                throw usage("--address " + *net.address + " is the network address of its subnet, not a host address");
            }
            if (broadcast_of(*cidr) == cidr->address) {
                throw usage("--address " + *net.address + " is the broadcast address of its subnet");
            }
        }
    }
    if (!net.gateway) {
        return;
    }
    const auto gw = parse_ip(*net.gateway);
    if (!gw) {
        throw usage("--gateway '" + *net.gateway + "' is not an IP address", "e.g. --gateway 192.168.1.1 (no prefix length)");
    }
    if (cidr) {
        if (gw->family != cidr->address.family) {
            throw usage("--gateway " + *net.gateway + " and --address " + *net.address + " are of different address families");
        }
        if (!in_subnet(*cidr, *gw)) {
            throw usage("--gateway " + *net.gateway + " is not inside --address " + *net.address,
                        "the gateway must be reachable on the bridge's subnet");
        }
        if (*gw == cidr->address) {
            throw usage("--gateway is the bridge's own address " + *net.gateway);
        }
    }
}

// --pin-nics, --apply-network and --confirm-timeout: the combinations that make sense.
void validate_apply_options(const NetworkRequest& net)
{
    if (net.pin_nics && net.apply == ApplyNetwork::now) {
        throw usage("--pin-nics and --apply-network cannot go together: pinned names take effect at the next boot, and "
                    "ifreload -a now would name NICs that do not exist yet",
                    "leave out --apply-network: the pins and the bond take effect together at the next boot");
    }
    if (net.confirm_timeout_seconds && net.apply != ApplyNetwork::now) {
        throw usage("--confirm-timeout needs --apply-network", "without --apply-network the change is only staged in interfaces.new");
    }
}

// The interfaces file a network plan builds on: interfaces.new when it
// exists (pending GUI changes), else interfaces.
struct BaseInterfaces
{
    std::optional<std::string> live_text;
    std::optional<std::string> staged_text;
    std::string path;
};

// Reads interfaces and interfaces.new; nullopt when the plan is refused (an
// unreadable file, or neither exists).
std::optional<BaseInterfaces> read_base_interfaces(const PlanContext& ctx, Plan& plan)
{
    const std::string live(k_interfaces);
    const std::string staged(k_interfaces_new);
    BaseInterfaces base;
    base.live_text = detail::read_current(ctx, plan, live);
    base.staged_text = detail::read_current(ctx, plan, staged);
    if (plan.refused()) {
        return std::nullopt;
    }
    if (!base.live_text && !base.staged_text) {
        plan.refusals.push_back({live + " does not exist: this does not look like a Proxmox VE host with ifupdown2",
                                 {"passthru edits the file Proxmox VE writes; create the base configuration first"}});
        return std::nullopt;
    }
    base.path = base.staged_text ? staged : live;
    if (base.staged_text) {
        plan.warnings.push_back(staged
                                + " holds network changes that are not applied yet; passthru builds on them (as "
                                  "the Proxmox VE GUI does), so they will be applied together");
    }
    return base;
}

void warn_stray_lines(const format::InterfacesFile& file, const std::string& base_path, Plan& plan)
{
    for (const std::size_t index : file.stray_lines()) {
        plan.warnings.push_back(base_path + " line " + std::to_string(file.lines()[index].line_number) + " is outside any stanza ('"
                                + std::string(util::trim(file.lines()[index].raw))
                                + "'); ifupdown2 reports it as an error; passthru keeps it as is");
    }
}

// Refuses names that are not safe words for a root-run file, and interfaces
// of the request defined in a file the base file sources (passthru edits
// only the base file and will not split an interface across files).
void check_names_and_sources(const PlanContext& ctx, const format::InterfacesFile& file, const std::string& base_path, Plan& plan)
{
    const NetworkRequest& net = *ctx.request.network;
    // Definitions in sourced files are not edited: refuse to split an interface across files.
    std::vector<std::string> ours = net.bond_slaves;
    ours.push_back(net.bond_name);
    ours.push_back(net.bridge);
    // Each name becomes an `iface`/`bond-slaves`/`bridge-ports` word of a root-run file.
    for (const auto& name : ours) {
        if (auto bad = format::invalid_value(format::Grammar::nic_name, name, "the interface name")) {
            plan.refusals.push_back({"will not write " + base_path + ": " + *bad, {"name the interface as the kernel does ('ip link')"}});
            return;
        }
    }
    std::vector<std::string> chain{ctx.fs.resolve(base_path).value_or(base_path)};
    std::vector<SourcedFile> sourced;
    if (!follow_sources(ctx.fs, file, chain, sourced, plan)) {
        return;
    }
    for (const auto& [path, text] : sourced) {
        for (const auto& st : text.stanzas()) {
            if (std::find(ours.begin(), ours.end(), st.name) != ours.end()) {
                plan.refusals.push_back(
                    {st.name + " is defined in " + path + " (sourced from " + base_path + "); passthru edits only " + base_path,
                     {"move that stanza into " + base_path + " or remove it, and plan again"}});
            }
        }
    }
}

BondBridgeSpec bond_bridge_spec(const NetworkRequest& net)
{
    BondBridgeSpec spec;
    spec.slaves = net.bond_slaves;
    spec.bond = net.bond_name;
    spec.mode = net.bond_mode;
    spec.xmit_hash_policy = net.xmit_hash_policy;
    spec.bridge = net.bridge;
    spec.address = net.address;
    spec.gateway = net.gateway;
    spec.vlan_aware = net.vlan_aware;
    return spec;
}

// --pin-nics: the edited file names NICs by their pinned names, and the .link
// files are staged beside it.
void apply_pin_change(const PlanContext& ctx, const PinChange& pin_change, NetworkEdit& edit, Plan& plan)
{
    if (!pin_change.rename.empty()) {
        std::vector<std::string> renames;
        renames.reserve(pin_change.rename.size());
        for (const auto& [from, to] : pin_change.rename) {
            renames.push_back(from + " -> " + to);
        }
        edit.text = rename_nics(edit.text, pin_change.rename);
        edit.changed = true;
        edit.reasons.push_back("--pin-nics: NICs named by their pinned names (" + util::join(renames, ", ")
                               + "), as pve-network-interface-pinning rewrites the file");
        for (const auto& [path, content] : pin_change.files) {
            detail::stage_file(ctx, plan, path, content, {pin_change.why.at(path)});
        }
        plan.notes.push_back("network: the pinned names (" + util::join(renames, ", ")
                             + ") take effect at the next boot, together with the staged interfaces.new");
    } else if (ctx.request.network->pin_nics) {
        plan.notes.push_back("network: --pin-nics: every physical NIC is pinned already");
    }
}

// --apply-network: what PVE's reload_network_config does: interfaces.new
// renamed over interfaces, then ifreload -a; refused without
// --confirm-timeout when the change could lock the user out.
void apply_network_now(const PlanContext& ctx, const BaseInterfaces& base, const NetworkEdit& edit, std::vector<std::string> reasons,
                       Plan& plan)
{
    const NetworkRequest& net = *ctx.request.network;
    const std::string live(k_interfaces);
    const std::string staged(k_interfaces_new);
    const auto running = format::InterfacesFile::parse(base.live_text.value_or(std::string()));
    const LockoutRisk risk = assess_lockout(ctx.inventory.runtime, running, edit.touched, ctx.request.ssh_connection);
    if (risk.guard_needed && !net.confirm_timeout_seconds) {
        Refusal refusal{"applying the network change now could lock you out: " + util::join(risk.reasons, "; "), {}};
        refusal.hints.push_back("add --confirm-timeout 120: passthru applies it, waits for 'passthru confirm' from a NEW "
                                "connection, and otherwise restores the previous file and runs ifreload -a again");
        refusal.hints.push_back("or leave out --apply-network: the change is staged in " + staged);
        plan.refusals.push_back(std::move(refusal));
        return;
    }
    reasons.push_back("applied now (--apply-network), as Proxmox VE's 'Apply Configuration' does: the new file goes in "
                      "place of "
                      + live + ", then ifreload -a");
    detail::stage_file(ctx, plan, live, edit.text, std::move(reasons));
    if (base.staged_text) {
        detail::stage_file(ctx, plan, staged, std::nullopt,
                           {"its pending changes are part of the new " + live
                            + "; left in place it would overwrite "
                              "the file again at the next boot (pvenetcommit)"});
    }
    add_file_steps(plan, ctx.inventory.host.bootloader); // ifreload -a, for the live file
    if (net.confirm_timeout_seconds) {
        std::string why = risk.reasons.empty() ? std::string("requested with --confirm-timeout") : util::join(risk.reasons, "; ");
        plan.notes.push_back("network: after ifreload -a, apply waits " + std::to_string(*net.confirm_timeout_seconds)
                             + " s for 'passthru confirm' run from a new connection; without it the previous " + live
                             + " is restored and ifreload -a runs again (" + why + ")");
    }
}

} // namespace

void validate_network_request(const NetworkRequest& net, const scan::Inventory& inventory, const util::HostFs& fs)
{
    if (net.bond_slaves.empty()) {
        throw usage("--bond needs at least one NIC name");
    }
    const auto nics = inventory.net_interfaces();
    validate_bond_members(net, inventory, fs, nics);
    validate_bond_names(net, nics);
    validate_addressing(net);
    validate_apply_options(net);
}

void plan_network(const PlanContext& ctx, Plan& plan)
{
    if (!ctx.request.network) {
        return;
    }
    const NetworkRequest& net = *ctx.request.network;
    // Pinned names (docs/facts.md: pve9): a pin whose .link takes effect at the
    // next boot stands for the NIC's current kernel name while validating.
    const auto pins = read_pinned_nics(ctx.fs, plan.warnings);
    NetworkRequest checked = net;
    const auto pending = pending_pins(ctx.inventory, pins);
    for (auto& slave : checked.bond_slaves) {
        if (const auto it = pending.find(slave); it != pending.end()) {
            slave = it->second;
        }
    }
    validate_network_request(checked, ctx.inventory, ctx.fs);
    check_bond_pinning(ctx, net.bond_slaves, pins, net.pin_nics, plan);
    if (plan.refused()) {
        return;
    }
    const PinChange pin_change = net.pin_nics ? plan_pins(ctx.inventory, pins) : PinChange{};

    const auto base = read_base_interfaces(ctx, plan);
    if (!base) {
        return;
    }
    const std::string& base_path = base->path;
    const auto file = format::InterfacesFile::parse(base->staged_text ? *base->staged_text : *base->live_text);
    warn_stray_lines(file, base_path, plan);
    check_names_and_sources(ctx, file, base_path, plan);
    if (plan.refused()) {
        return;
    }

    const BondBridgeSpec spec = bond_bridge_spec(net);
    NetworkEdit edit = edit_bond_bridge(file, spec);
    for (auto& w : edit.warnings) {
        plan.warnings.push_back(std::move(w));
    }
    if (!edit.refusals.empty()) {
        for (auto& r : edit.refusals) {
            plan.refusals.push_back(std::move(r));
        }
        return;
    }
    apply_pin_change(ctx, pin_change, edit, plan);

    const bool now = net.apply == ApplyNetwork::now;
    if (!edit.changed) {
        plan.notes.push_back("network: " + base_path + " already has " + net.bond_name + " under " + net.bridge + " as requested");
        if (!now || !base->staged_text) {
            return;
        }
        // --apply-network with a pending interfaces.new: it still has to go in place.
        edit.touched = spec.slaves;
        edit.touched.push_back(spec.bond);
        edit.touched.push_back(spec.bridge);
    }

    std::vector<std::string> reasons{"bond " + net.bond_name + " (" + util::join(net.bond_slaves, ", ") + ", " + net.bond_mode
                                     + ") under bridge " + net.bridge + ", as Proxmox VE writes it (read from " + base_path + ")"};
    for (auto& r : edit.reasons) {
        reasons.push_back(std::move(r));
    }
    if (now) {
        apply_network_now(ctx, *base, edit, std::move(reasons), plan);
        return;
    }
    const std::string staged(k_interfaces_new);
    reasons.push_back("staged in Proxmox VE's pending-changes file: it takes effect with 'Apply Configuration' in "
                      "the GUI, or at the next boot (pvenetcommit moves it into place)");
    detail::stage_file(ctx, plan, staged, edit.text, std::move(reasons));
    plan.notes.push_back("network: the bond/bridge change is staged in " + staged
                         + "; review it in the GUI (System > Network) and press 'Apply Configuration', or "
                           "reboot; add --apply-network to apply it now");
}

} // namespace passthru::plan
