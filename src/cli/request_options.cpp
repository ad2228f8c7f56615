// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/request_options.hpp"

#include <algorithm>
#include <iterator>
#include <optional>

#include "plan/request.hpp"
#include "util/command_runner.hpp"
#include "util/strings.hpp"

namespace passthru::cli {

void add_request_options(po::options_description& options)
{
    options.add_options()("vm", po::value<std::string>()->value_name("VMID"),
                          "VMID (100-999999999) of the Proxmox VM, or the libvirt domain name")(
        "ct", po::value<std::vector<std::string>>()->value_name("VMID")->composing(),
        "VMID of a Proxmox container to give cards to (its devN: lines); its own --gpus follows it, repeat per container")(
        "gpus", po::value<std::vector<std::string>>()->value_name("SEL")->composing(),
        "which GPU cards: all, indexes from scan (0,2) or slots (0000:01:00,41:00); binds to the --vm or --ct before it")(
        "acs-override", "add pcie_acs_override=downstream,multifunction (weakens isolation)")(
        "no-fabric", "NVSwitch system: pass a selection without the NVSwitches, giving up NVLink in the guest")(
        "backend", po::value<std::string>()->value_name("NAME")->default_value("proxmox"),
        "proxmox or libvirt")("connect", po::value<std::string>()->value_name("URI"), "libvirt connection URI (--backend libvirt)")(
        "mapping", po::value<std::string>()->value_name("ID"), "use a Proxmox cluster PCI mapping with this id")(
        "node-scan", po::value<std::vector<std::string>>()->value_name("NODE=FILE")->composing(),
        "NODE=FILE: build the cluster mapping from this node's 'passthru scan --json' (repeat per node; without --vm)")(
        "romfile", po::value<std::vector<std::string>>()->value_name("SLOT=FILE")->composing(),
        "SLOT=FILE: check FILE as the ROM of card SLOT, place it in /usr/share/kvm and set romfile= (repeat per card)")(
        "profile", po::value<std::string>()->value_name("NAME"), "VM profile from profiles/vm (default: linux-ml)")(
        "bond", po::value<std::string>()->value_name("NIC,NIC"),
        "bond these NICs: NIC,NIC[,...]")("bond-mode", po::value<std::string>()->value_name("MODE"),
                                          "balance-rr|active-backup|balance-xor|broadcast|802.3ad|balance-tlb|balance-alb")(
        "bond-name", po::value<std::string>()->value_name("NAME"), "name of the bond (default bond0)")(
        "bond-xmit-hash-policy", po::value<std::string>()->value_name("POLICY"),
        "layer2|layer2+3|layer3+4|encap2+3|encap3+4 (balance-xor, 802.3ad)")("bridge", po::value<std::string>()->value_name("NAME"),
                                                                             "bridge to put the bond under (default vmbr0)")(
        "address", po::value<std::string>()->value_name("CIDR"), "address of the bridge in CIDR form (192.168.1.252/24)")(
        "gateway", po::value<std::string>()->value_name("ADDRESS"),
        "default gateway of the bridge")("vlan-aware", "make the bridge VLAN-aware (bridge-vids 2-4094)")(
        "pin-nics", "pin every unpinned NIC's name to its MAC as Proxmox VE 9 does (50-pmx-nicN.link; with --bond)")(
        "apply-network", "apply the network change now with ifreload -a (else staged in interfaces.new)")(
        "confirm-timeout", po::value<int>()->value_name("SECONDS"), "seconds to wait for 'passthru confirm' before restoring the network");
}

bool has_request_options(const po::variables_map& vm)
{
    for (const char* key : {"vm", "ct", "gpus", "bond", "bridge", "mapping", "node-scan", "address", "gateway"}) {
        if (vm.count(key) != 0U) {
            return true;
        }
    }
    return false;
}

namespace {

// The options of the bond/bridge part of a request.
constexpr const char* k_network_options[] = {"bond",
                                             "bond-mode",
                                             "bridge",
                                             "address",
                                             "gateway",
                                             "vlan-aware",
                                             "pin-nics",
                                             "bond-name",
                                             "apply-network",
                                             "confirm-timeout",
                                             "bond-xmit-hash-policy"};

// The bond/bridge request, when any of its options is given (then --bond is required).
std::optional<plan::NetworkRequest> parse_network_request(const po::variables_map& vm)
{
    const bool any_network =
        std::any_of(std::begin(k_network_options), std::end(k_network_options), [&](const char* key) { return vm.count(key) != 0U; });
    if (!any_network) {
        return std::nullopt;
    }
    plan::NetworkRequest net;
    if (vm.count("bond") == 0U) {
        throw Error(Errc::usage, "the bond/bridge options need --bond NIC,NIC")
            .with_hint("e.g. --bond enp66s0f0,enp66s0f1 --bond-mode balance-alb");
    }
    net.bond_slaves = util::split(vm["bond"].as<std::string>(), ",");
    if (vm.count("bond-mode") != 0U) {
        net.bond_mode = vm["bond-mode"].as<std::string>();
    }
    if (vm.count("bond-name") != 0U) {
        net.bond_name = vm["bond-name"].as<std::string>();
    }
    if (vm.count("bond-xmit-hash-policy") != 0U) {
        net.xmit_hash_policy = vm["bond-xmit-hash-policy"].as<std::string>();
    }
    if (vm.count("bridge") != 0U) {
        net.bridge = vm["bridge"].as<std::string>();
    }
    if (vm.count("address") != 0U) {
        net.address = vm["address"].as<std::string>();
    }
    if (vm.count("gateway") != 0U) {
        net.gateway = vm["gateway"].as<std::string>();
    }
    net.vlan_aware = vm.count("vlan-aware") != 0U;
    net.pin_nics = vm.count("pin-nics") != 0U;
    if (vm.count("apply-network") != 0U) {
        net.apply = plan::ApplyNetwork::now;
    }
    if (vm.count("confirm-timeout") != 0U) {
        net.confirm_timeout_seconds = vm["confirm-timeout"].as<int>();
    }
    return net;
}

// One --gpus value, trimmed; an empty one is a usage error.
std::string gpus_value(const std::string& value)
{
    std::string gpus(util::trim(value));
    if (gpus.empty()) {
        throw Error(Errc::usage, "--gpus is empty").with_hint("use --gpus all, --gpus 0,1 or --gpus 0000:01:00");
    }
    return gpus;
}

// Each --gpus binds to the --vm or --ct before it; a --gpus before any guest
// option binds to the first one after it (so "--gpus all --vm 101" still means
// the VM). Each guest takes one --gpus.
void bind_guest_gpus(const po::variables_map& vm, plan::Request& req)
{
    if (vm.count(k_guest_order_key) == 0U) {
        return;
    }
    const auto& order = vm[k_guest_order_key].as<std::vector<std::string>>();
    const auto cts = vm.count("ct") != 0U ? vm["ct"].as<std::vector<std::string>>() : std::vector<std::string>{};
    const auto gpus = vm.count("gpus") != 0U ? vm["gpus"].as<std::vector<std::string>>() : std::vector<std::string>{};
    std::size_t next_ct = 0;
    std::size_t next_gpus = 0;
    std::optional<std::string> early; // a --gpus before any guest option
    std::string* current = nullptr;   // the gpus of the guest option last seen
    std::string current_name;
    const auto bind = [&](std::string* target, const std::string& name, std::string value) {
        if (!target->empty()) {
            throw Error(Errc::usage, name + " has --gpus twice").with_hint("give each --vm and --ct one --gpus after it");
        }
        *target = std::move(value);
    };
    for (const auto& key : order) {
        if (key == "gpus") {
            std::string value = gpus_value(gpus.at(next_gpus++));
            if (current == nullptr) {
                if (early) {
                    throw Error(Errc::usage, "--gpus is given twice before any --vm or --ct")
                        .with_hint("write each guest's --gpus after it: --vm 101 --gpus 0,1 --ct 105 --gpus 2");
                }
                early = std::move(value);
            } else {
                bind(current, current_name, std::move(value));
            }
            continue;
        }
        if (key == "ct") {
            req.containers.push_back({std::string(util::trim(cts.at(next_ct++))), {}});
            current = &req.containers.back().gpus;
            current_name = "--ct " + req.containers.back().ct;
        } else {
            current = &req.gpus;
            current_name = "--vm";
        }
        if (early) {
            bind(current, current_name, std::move(*early));
            early.reset();
        }
    }
    if (early) {
        req.gpus = std::move(*early); // no guest option at all: --mapping's cards (--node-scan), or make_plan's error
    }
}

} // namespace

plan::Request parse_request(const po::variables_map& vm)
{
    plan::Request req;
    const std::string backend = vm["backend"].as<std::string>();
    const auto chosen = plan::backend_from(backend);
    if (!chosen) {
        throw Error(Errc::usage, "--backend must be " + plan::backend_names() + ", not '" + backend + "'");
    }
    req.backend = *chosen;
    if (vm.count("vm") != 0U) {
        req.vm = vm["vm"].as<std::string>();
        if (plan::backend_row(req.backend).numeric_vmid) {
            const auto id = util::parse_int(req.vm);
            if (id && *id >= 0 && req.vm.find_first_not_of("0123456789") == std::string::npos) {
                req.vmid = static_cast<std::uint64_t>(*id);
            }
        } else if (req.vm.empty()) {
            throw Error(Errc::usage, "--vm must name a libvirt domain");
        }
    }
    bind_guest_gpus(vm, req);
    if (vm.count("acs-override") != 0U) {
        req.acs_override = plan::AcsOverride::yes;
    }
    if (vm.count("no-fabric") != 0U) {
        req.no_fabric = plan::NoFabric::yes;
    }
    if (vm.count("connect") != 0U) {
        req.connect_uri = vm["connect"].as<std::string>();
    }
    if (vm.count("mapping") != 0U) {
        req.mapping = vm["mapping"].as<std::string>();
    }
    if (vm.count("node-scan") != 0U) {
        for (const auto& value : vm["node-scan"].as<std::vector<std::string>>()) {
            const auto eq = value.find('=');
            if (eq == std::string::npos) {
                throw Error(Errc::usage, "--node-scan '" + value + "': write NODE=FILE").with_hint("e.g. --node-scan gpu2=/tmp/gpu2.json");
            }
            req.node_scans.push_back({value.substr(0, eq), value.substr(eq + 1)});
        }
    }
    if (vm.count("romfile") != 0U) {
        for (const auto& value : vm["romfile"].as<std::vector<std::string>>()) {
            const auto eq = value.find('=');
            if (eq == std::string::npos) {
                throw Error(Errc::usage, "--romfile '" + value + "': write SLOT=FILE").with_hint("e.g. --romfile 0000:01:00=/root/gpu.rom");
            }
            req.romfiles.push_back({value.substr(0, eq), value.substr(eq + 1)});
        }
    }
    if (vm.count("profile") != 0U) {
        req.vm_profile = vm["profile"].as<std::string>();
    }
    req.network = parse_network_request(vm);
    if (auto valid = plan::validate_request(req); !valid) {
        throw valid.error();
    }
    return req;
}

std::string request_to_options(const plan::Request& req)
{
    std::vector<std::string> args;
    if (!req.vm.empty()) {
        args.insert(args.end(), {"--vm", req.vm});
    }
    if (!req.gpus.empty()) {
        args.insert(args.end(), {"--gpus", req.gpus});
    }
    for (const auto& c : req.containers) {
        args.insert(args.end(), {"--ct", c.ct, "--gpus", c.gpus});
    }
    if (req.acs_override == plan::AcsOverride::yes) {
        args.emplace_back("--acs-override");
    }
    if (req.no_fabric == plan::NoFabric::yes) {
        args.emplace_back("--no-fabric");
    }
    if (req.backend == plan::Backend::libvirt) {
        args.insert(args.end(), {"--backend", std::string(plan::to_string(req.backend))});
    }
    if (req.connect_uri) {
        args.insert(args.end(), {"--connect", *req.connect_uri});
    }
    if (req.mapping) {
        args.insert(args.end(), {"--mapping", *req.mapping});
    }
    for (const auto& ns : req.node_scans) {
        args.insert(args.end(), {"--node-scan", ns.node + "=" + ns.file});
    }
    for (const auto& rf : req.romfiles) {
        args.insert(args.end(), {"--romfile", rf.slot + "=" + rf.file});
    }
    if (req.vm_profile) {
        args.insert(args.end(), {"--profile", *req.vm_profile});
    }
    if (req.network) {
        const auto& n = *req.network;
        args.insert(args.end(), {"--bond", util::join(n.bond_slaves, ","), "--bond-mode", n.bond_mode});
        if (n.bond_name != "bond0") {
            args.insert(args.end(), {"--bond-name", n.bond_name});
        }
        if (n.xmit_hash_policy) {
            args.insert(args.end(), {"--bond-xmit-hash-policy", *n.xmit_hash_policy});
        }
        args.insert(args.end(), {"--bridge", n.bridge});
        if (n.address) {
            args.insert(args.end(), {"--address", *n.address});
        }
        if (n.gateway) {
            args.insert(args.end(), {"--gateway", *n.gateway});
        }
        if (n.vlan_aware) {
            args.emplace_back("--vlan-aware");
        }
        if (n.pin_nics) {
            args.emplace_back("--pin-nics");
        }
        if (n.apply == plan::ApplyNetwork::now) {
            args.emplace_back("--apply-network");
        }
        if (n.confirm_timeout_seconds) {
            args.insert(args.end(), {"--confirm-timeout", std::to_string(*n.confirm_timeout_seconds)});
        }
    }
    return util::shell_quote(args);
}

} // namespace passthru::cli
