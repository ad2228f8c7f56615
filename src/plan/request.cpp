// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/request.hpp"

#include <algorithm>
#include <set>

#include "util/strings.hpp"

namespace passthru::plan {

const std::vector<std::string> k_bond_modes{"balance-rr", "active-backup", "balance-xor", "broadcast",
                                            "802.3ad",    "balance-tlb",   "balance-alb"};

bool valid_ifname(std::string_view name)
{
    if (name.empty() || name.size() > 15 || name == "." || name == "..") {
        return false;
    }
    return name.find_first_of("/: \t\n") == std::string_view::npos;
}

namespace {

tl::unexpected<Error> usage_error(const std::string& message)
{
    return tl::unexpected(Error(Errc::usage, message));
}

Result<void> validate_network(const NetworkRequest& net)
{
    if (net.bond_slaves.empty()) {
        return usage_error("--bond needs at least one NIC name");
    }
    for (const auto& nic : net.bond_slaves) {
        if (!valid_ifname(nic)) {
            return usage_error("--bond: '" + nic + "' is not a valid interface name");
        }
    }
    if (std::find(k_bond_modes.begin(), k_bond_modes.end(), net.bond_mode) == k_bond_modes.end()) {
        return usage_error("--bond-mode '" + net.bond_mode + "' is not one of " + util::join(k_bond_modes, ", "));
    }
    if (!valid_ifname(net.bond_name)) {
        return usage_error("--bond-name: '" + net.bond_name + "' is not a valid interface name");
    }
    if (!valid_ifname(net.bridge)) {
        return usage_error("--bridge: '" + net.bridge + "' is not a valid interface name");
    }
    if (net.confirm_timeout_seconds && (*net.confirm_timeout_seconds < 10 || *net.confirm_timeout_seconds > 3600)) {
        return usage_error("--confirm-timeout must be 10 to 3600 seconds");
    }
    return {};
}

// A node's name is its host name, one DNS label: pve-node (pve-common's JSONSchema),
// letters, digits and '-', neither first nor last a '-', and at most 63 characters
// (docs/facts.md: pci-mapping).
constexpr std::size_t k_max_node_name = 63;

bool valid_node_name(std::string_view node)
{
    const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
    if (node.empty() || node.size() > k_max_node_name || !alnum(node.front()) || !alnum(node.back())) {
        return false;
    }
    return std::all_of(node.begin(), node.end(), [&](char c) { return alnum(c) || c == '-'; });
}

// --node-scan builds a cluster mapping on its own: --mapping and --gpus, no VM,
// no network, each node once.
Result<void> validate_node_scans(const Request& request)
{
    if (request.node_scans.empty()) {
        return {};
    }
    if (!request.vm.empty() || request.network || request.trial_minutes || !backend_row(request.backend).cluster_mapping) {
        return usage_error("--node-scan builds a cluster mapping on its own: leave out --vm, the network options, --trial and --backend");
    }
    if (!request.mapping || request.gpus.empty()) {
        return usage_error("--node-scan needs --mapping (the mapping id) and --gpus (which cards of each node)");
    }
    std::set<std::string> seen;
    for (const auto& ns : request.node_scans) {
        if (!valid_node_name(ns.node)) {
            return usage_error("--node-scan: '" + ns.node
                               + "' is not a Proxmox VE node name (a host name: letters, digits and '-', at most 63)");
        }
        if (ns.file.empty()) {
            return usage_error("--node-scan " + ns.node + "= names no file");
        }
        if (!seen.insert(ns.node).second) {
            return usage_error("--node-scan: node " + ns.node + " is given twice");
        }
    }
    return {};
}

// A Proxmox VE VMID as written: digits, no leading zero, 100-999999999.
Result<void> validate_ct(const std::string& ct)
{
    const std::string range = "--ct " + ct + ": VMID is outside 100-999999999 (Proxmox VE's VMID range)";
    if (ct.empty() || ct.find_first_not_of("0123456789") != std::string::npos) {
        return usage_error("--ct must be a numeric container VMID, not '" + ct + "'");
    }
    if (ct.size() > 1 && ct.front() == '0') {
        return usage_error("--ct " + ct + ": write the VMID without leading zeros");
    }
    const auto id = util::parse_int(ct);
    if (!id || static_cast<std::uint64_t>(*id) < k_min_vmid || static_cast<std::uint64_t>(*id) > k_max_vmid) {
        return usage_error(range);
    }
    return {};
}

// --ct N --gpus SPEC: Proxmox VE only, each container once, each with its cards,
// none the VM's own VMID; no cluster mapping, trial or node scan beside them.
Result<void> validate_containers(const Request& request)
{
    if (request.containers.empty()) {
        return {};
    }
    if (!backend_row(request.backend).numeric_vmid || request.mapping || !request.node_scans.empty()) {
        return usage_error("--ct gives cards to a Proxmox VE container: leave out --backend libvirt, --mapping and --node-scan");
    }
    std::set<std::string> seen;
    for (const auto& c : request.containers) {
        if (auto valid = validate_ct(c.ct); !valid) {
            return valid;
        }
        if (c.gpus.empty()) {
            return usage_error("--ct " + c.ct + " needs its own --gpus after it (e.g. --ct " + c.ct + " --gpus 2)");
        }
        if (!seen.insert(c.ct).second) {
            return usage_error("--ct " + c.ct + " is given twice");
        }
        if (c.ct == request.vm) {
            return usage_error("--ct " + c.ct + " is also --vm: a VMID is a VM or a container, not both");
        }
    }
    return {};
}

// --romfile SLOT=FILE: the Proxmox VE backend's hostpci option, for a VM; each
// card named once (the card itself is found when the plan is made).
Result<void> validate_romfiles(const Request& request)
{
    if (request.romfiles.empty()) {
        return {};
    }
    if (request.vm.empty() || request.backend != Backend::proxmox) {
        return usage_error("--romfile sets romfile= on a Proxmox VE VM's hostpci line: it needs --vm, and the proxmox backend");
    }
    std::set<std::string> seen;
    for (const auto& rf : request.romfiles) {
        if (rf.slot.empty() || rf.slot.find(',') != std::string::npos || rf.slot == "all") {
            return usage_error("--romfile '" + rf.slot + "=" + rf.file + "': SLOT names one card (an index from scan or a slot address)");
        }
        if (rf.file.empty()) {
            return usage_error("--romfile " + rf.slot + "= names no file");
        }
        if (!seen.insert(rf.slot).second) {
            return usage_error("--romfile: " + rf.slot + " is given twice");
        }
    }
    return {};
}

} // namespace

Result<void> validate_request(const Request& request)
{
    if (auto nodes = validate_node_scans(request); !nodes) {
        return nodes;
    }
    if (auto cts = validate_containers(request); !cts) {
        return cts;
    }
    if (auto roms = validate_romfiles(request); !roms) {
        return roms;
    }
    if (!request.vm.empty()) {
        if (backend_row(request.backend).numeric_vmid) {
            const bool numeric = request.vm.find_first_not_of("0123456789") == std::string::npos;
            const std::string range = "--vm " + request.vm + ": VMID is outside 100-999999999 (Proxmox VE's VMID range)";
            const std::string not_numeric = "--vm must be a numeric VMID for Proxmox VE, not '" + request.vm + "'";
            if (!numeric) {
                return usage_error(not_numeric);
            }
            // The number as a plain value once it is known to be one (an
            // optional read after the check drew -Wmaybe-uninitialized at -O3).
            const auto parsed = util::parse_int(request.vm);
            if (!parsed) {
                return usage_error(range); // more digits than any VMID
            }
            const long long id = *parsed;
            if (!request.vmid || static_cast<std::uint64_t>(id) != *request.vmid) {
                return usage_error(not_numeric);
            }
            if (std::to_string(id) != request.vm) {
                return usage_error("--vm " + request.vm + ": write the VMID without leading zeros (" + std::to_string(id) + ")");
            }
            if (*request.vmid < k_min_vmid || *request.vmid > k_max_vmid) {
                return usage_error(range);
            }
        }
    } else if (request.vmid) {
        return usage_error("a VMID without --vm");
    }
    if (request.trial_minutes && (*request.trial_minutes < 2 || *request.trial_minutes > 1440)) {
        return usage_error("--trial-minutes must be between 2 and 1440, not " + std::to_string(*request.trial_minutes));
    }
    if (request.network) {
        return validate_network(*request.network);
    }
    return {};
}

} // namespace passthru::plan
