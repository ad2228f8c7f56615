// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/vm/start_checks.hpp"

#include <algorithm>

#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

using format::pve::HostPci;
using format::pve::PropertyString;
using format::pve::VmConfig;

long long int_key(const VmConfig& config, std::string_view key, long long fallback)
{
    const auto value = config.get(key);
    return value ? util::parse_int(*value).value_or(fallback) : fallback;
}

// sockets x cores against the node's processor count: qemu-server dies with
// "MAX N vcpus allowed per VM on this node" (docs/facts.md: qm-start).
void check_vcpus(const StartContext& ctx, const VmConfig& config, std::vector<Refusal>& out)
{
    const int cpus = ctx.inventory.host.cpu_count;
    if (cpus <= 0) {
        return; // no /proc/cpuinfo under the root: nothing to compare with
    }
    // "smp" is the old spelling of sockets; sockets wins when both are set.
    const long long sockets = int_key(config, "sockets", int_key(config, "smp", 1));
    const long long cores = int_key(config, "cores", 1);
    const long long vcpus = sockets * cores;
    if (vcpus <= cpus) {
        return;
    }
    const int fit = max_cores(cpus, static_cast<int>(sockets));
    const std::string fix = sockets > cpus ? "qm set " + ctx.id + " --sockets 1 --cores " + std::to_string(cpus)
                                           : "qm set " + ctx.id + " --cores " + std::to_string(fit);
    out.push_back({"VM " + ctx.id + " has " + std::to_string(vcpus) + " vCPUs (" + std::to_string(sockets) + " socket(s) x "
                       + std::to_string(cores) + " cores) but this node has " + std::to_string(cpus)
                       + " CPUs: Proxmox VE refuses to start it (\"MAX " + std::to_string(cpus) + " vcpus allowed per VM on this node\")",
                   {fix}});
}

bool q35(const VmConfig& config)
{
    const PropertyString machine = PropertyString::parse(config.get("machine").value_or(""));
    const auto type = machine.get("").has_value() ? machine.get("") : machine.get("type");
    return type && format::pve::valid_q35_machine(*type);
}

// The hostpciN entries of the current config, in key order.
std::vector<std::pair<std::string, std::string>> hostpci_entries(const VmConfig& config)
{
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [key, value] : config.entries()) {
        if (key.rfind("hostpci", 0) == 0 && key.size() > 7
            && std::all_of(key.begin() + 7, key.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
            out.emplace_back(key, value);
        }
    }
    return out;
}

bool id_present(const scan::Inventory& inventory, const std::string& id)
{
    return std::any_of(inventory.devices.begin(), inventory.devices.end(),
                       [&](const scan::PciDevice& d) { return format::pve::hostpci_id_covers(id, d.address.str()); });
}

// pcie=1 needs q35; every host id must name a device of this node; a
// mapping must have an entry for this node (qemu-server PCI.pm).
void check_hostpci(const StartContext& ctx, const VmConfig& config, std::vector<Refusal>& out)
{
    const bool is_q35 = q35(config);
    for (const auto& [key, value] : hostpci_entries(config)) {
        const HostPci pci = HostPci::parse(value);
        if (!is_q35 && format::pve::parse_boolean(pci.options.get("pcie").value_or("0")) == true) {
            out.push_back({"VM " + ctx.id + "'s " + key
                               + " has pcie=1 but the machine is not q35: Proxmox VE refuses to start it (\"q35 "
                                 "machine model is not enabled\")",
                           {"qm set " + ctx.id + " --machine q35"}});
        }
        for (const auto& id : pci.host_ids) {
            if (!id_present(ctx.inventory, id)) {
                out.push_back({"VM " + ctx.id + "'s " + key + " passes " + id
                                   + ", which is not on this node's PCI bus: Proxmox VE refuses "
                                     "to start it (\"no PCI device found for '"
                                   + id + "'\")",
                               {"qm set " + ctx.id + " --delete " + key + " (or correct the address: lspci -D)"}});
            }
        }
        if (!pci.mapping || !ctx.node) {
            continue;
        }
        const auto* section = ctx.mappings ? ctx.mappings->find(*pci.mapping) : nullptr;
        const bool here =
            section != nullptr
            && std::any_of(section->maps.begin(), section->maps.end(), [&](const format::pve::MapEntry& m) { return m.node == *ctx.node; });
        if (!here) {
            out.push_back({"VM " + ctx.id + "'s " + key + " uses mapping " + *pci.mapping + ", which has no entry for node " + *ctx.node
                               + ": Proxmox VE refuses to start it (\"PCI device mapping not found for '" + *pci.mapping + "'\")",
                           {"add this node to the mapping (Datacenter > Resource Mappings, or passthru apply --mapping NAME), or qm set "
                            + ctx.id + " --delete " + key}});
        }
    }
}

// The page size qemu-server picks for hugepages (MiB), or the refusal.
std::optional<std::uint64_t> hugepage_size(const StartContext& ctx, const std::string& setting, std::uint64_t memory,
                                           std::vector<Refusal>& out)
{
    const auto& sizes = *ctx.inventory.host.hugepage_sizes_kib;
    const auto offered = [&](std::uint64_t mib) { return std::find(sizes.begin(), sizes.end(), mib * 1024) != sizes.end(); };
    const std::string fix_delete = "qm set " + ctx.id + " --delete hugepages";
    if (!offered(2) && !offered(1024)) {
        out.push_back({"VM " + ctx.id
                           + " asks for hugepages but this host's kernel offers none (/sys/kernel/mm/hugepages): Proxmox VE "
                             "refuses to start it (\"your system doesn't support hugepages\")",
                       {fix_delete}});
        return std::nullopt;
    }
    if (setting == "any") {
        if (offered(1024) && memory % 1024 == 0) {
            return 1024;
        }
        if (offered(2)) {
            return 2;
        }
        out.push_back({"VM " + ctx.id + " has " + std::to_string(memory)
                           + " MiB with hugepages: any, and this host offers only 1 GiB "
                             "pages: Proxmox VE refuses to start it",
                       {"qm set " + ctx.id + " --memory " + std::to_string((memory + 1023) / 1024 * 1024), fix_delete}});
        return std::nullopt;
    }
    const auto mib = util::parse_int(setting);
    if (!mib || *mib <= 0 || !offered(static_cast<std::uint64_t>(*mib))) {
        out.push_back({"VM " + ctx.id + " asks for hugepages of " + setting
                           + " MiB, which this host's kernel does not offer: Proxmox VE "
                             "refuses to start it (\"your system doesn't support hugepages of "
                           + setting + " MB\")",
                       {"qm set " + ctx.id + " --hugepages " + (offered(2) ? "2" : "1024"), fix_delete}});
        return std::nullopt;
    }
    return static_cast<std::uint64_t>(*mib);
}

// hugepages: numa must be on, the host must offer the page size, and the
// memory must be a whole number of pages (qemu-server Memory.pm).
void check_hugepages(const StartContext& ctx, const VmConfig& config, std::vector<Refusal>& out)
{
    const auto setting = config.get("hugepages");
    if (!setting) {
        return;
    }
    if (format::pve::parse_boolean(config.get("numa").value_or("0")) != true) {
        out.push_back({"VM " + ctx.id + " has hugepages: " + *setting
                           + " without numa: 1: Proxmox VE refuses to start it (\"numa needs to "
                             "be enabled to use hugepages\")",
                       {"qm set " + ctx.id + " --numa 1"}});
    }
    if (!ctx.inventory.host.hugepage_sizes_kib) {
        return; // no /sys/kernel/mm/hugepages under the root: sizes unknown
    }
    const std::uint64_t memory = vm_memory_mib(config);
    const auto page = hugepage_size(ctx, *setting, memory, out);
    if (page && (memory == 0 || memory % 2 != 0 || memory % *page != 0)) {
        out.push_back({"VM " + ctx.id + " has " + std::to_string(memory) + " MiB of memory, not a multiple of its " + std::to_string(*page)
                           + " MiB huge pages: Proxmox VE refuses to start it",
                       {"qm set " + ctx.id + " --memory " + std::to_string((memory + *page - 1) / *page * *page)}});
    }
}

} // namespace

std::uint64_t vm_memory_mib(const VmConfig& config)
{
    if (const auto value = config.get("memory")) {
        const PropertyString ps = PropertyString::parse(*value);
        auto current = ps.get("");
        if (!current) {
            current = ps.get("current");
        }
        if (current) {
            if (auto n = util::parse_int(*current); n && *n > 0) {
                return static_cast<std::uint64_t>(*n);
            }
        }
    }
    return 512; // PVE's default (docs/facts.md: vm-config)
}

int max_cores(int cpus, int sockets)
{
    return std::max(1, cpus / std::max(1, sockets));
}

std::vector<Refusal> start_refusals(const StartContext& ctx, const VmConfig& config)
{
    std::vector<Refusal> out;
    check_vcpus(ctx, config, out);
    check_hostpci(ctx, config, out);
    check_hugepages(ctx, config, out);
    return out;
}

VmConfig config_of_create(const std::vector<std::string>& argv)
{
    std::string text;
    for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
        if (argv[i].rfind("--", 0) == 0 && argv[i].size() > 2) {
            text += argv[i].substr(2) + ": " + argv[i + 1] + "\n";
            ++i;
        }
    }
    return VmConfig::parse(text);
}

} // namespace passthru::plan::detail
