// SPDX-License-Identifier: GPL-2.0-or-later
// scan_host and its parts: every PCI function of /sys/bus/pci/devices read (split
// over worker threads; one function in scan/scanner_device.cpp), named through
// libpci and given its network interfaces; the IOMMU groups; then the host facts,
// the cards (scan/scanner_cards.cpp) and the readiness problems.
#include "scan/scanner.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "scan/card_users.hpp"
#include "scan/kernel_log.hpp"
#include "scan/libpci.hpp"
#include "scan/scanner_detail.hpp"
#include "scan/vgpu.hpp"
#include "util/strings.hpp"

namespace passthru::scan {

namespace {

using detail::k_pci_devices;
using detail::parent_from_path;
using detail::read_pci_device;

std::string lower_text(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// The interface's MACs as pve-network-interface-pinning reads them: a bond
// member's own MAC is the bonding driver's perm_hwaddr, any other NIC's is its address.
NetLink read_net_link(const util::HostFs& fs, const std::string& ifname)
{
    const std::string base = "/sys/class/net/" + ifname;
    NetLink link;
    link.name = ifname;
    link.mac = lower_text(std::string(util::trim(fs.read_attr(base + "/address").value_or(""))));
    const auto perm = fs.read_attr(base + "/bonding_slave/perm_hwaddr");
    link.perm_mac = perm ? lower_text(std::string(util::trim(*perm))) : link.mac;
    if (const auto index = fs.read_attr(base + "/ifindex")) {
        if (const auto n = util::parse_int(util::trim(*index)); n && *n > 0 && *n < (1LL << 31)) {
            link.ifindex = static_cast<int>(*n);
        }
    }
    return link;
}

} // namespace

namespace {

// The PCI addresses among the names in /sys/bus/pci/devices; anything else is reported.
std::vector<std::pair<std::string, PciAddress>> pci_entries(const std::vector<std::string>& names, std::vector<Problem>& problems)
{
    std::vector<std::pair<std::string, PciAddress>> entries;
    entries.reserve(names.size());
    for (const auto& name : names) {
        if (auto addr = PciAddress::parse(name)) {
            entries.emplace_back(name, *addr);
        } else {
            problems.push_back({Severity::warning, "ignoring unexpected entry '" + name + "' in " + k_pci_devices, ""});
        }
    }
    return entries;
}

// Claims IOMMU groups for the worker threads: each group's type is read once.
class GroupClaims
{
public:
    bool claim(int number)
    {
        const std::lock_guard lock(m_mutex);
        return m_claimed.insert(number).second;
    }

private:
    std::mutex m_mutex;
    std::set<int> m_claimed;
};

// Reads every function (in entries' order). sysfs reads are syscall-bound:
// they are split over the cores (at most 4 threads; small hosts stay on one
// thread). With `groups` (the open iommu_groups directory), the type of each
// group a function links to is read there too, into group_types. The
// workers' problems, then libpci's warnings, go to problems.
std::vector<PciDevice> read_pci_devices(const util::HostFs& fs, const util::HostDir& devices_dir,
                                        const std::optional<util::HostDir>& sys_devices,
                                        const std::vector<std::pair<std::string, PciAddress>>& entries, const std::string& sysfs_path,
                                        const GpuVendors& vendors, const util::HostDir* groups, GroupTypes* group_types,
                                        std::vector<Problem>& problems)
{
    std::vector<PciDevice> devices(entries.size());
    const unsigned hw = std::max(1U, std::thread::hardware_concurrency());
    const std::size_t workers = entries.size() < 256 ? 1 : std::min<std::size_t>(std::min(hw, 4U), entries.size());
    std::vector<std::vector<Problem>> worker_problems(workers);
    std::vector<std::vector<std::string>> worker_warnings(workers);
    std::vector<GroupTypes> worker_types(workers);
    GroupClaims claims;
    auto work = [&](std::size_t w) {
        // libpci state is per thread: each worker decodes config space with
        // its own pci_access.
        LibPci pci(sysfs_path);
        for (std::size_t i = w; i < entries.size(); i += workers) {
            devices[i] =
                read_pci_device(fs, pci, devices_dir, sys_devices, entries[i].first, entries[i].second, vendors, worker_problems[w]);
            if (const auto g = devices[i].iommu_group; groups != nullptr && g && claims.claim(*g)) {
                worker_types[w].emplace(*g, groups->attr((std::to_string(*g) + "/type").c_str()));
            }
        }
        worker_warnings[w] = pci.warnings();
    };
    if (workers == 1) {
        work(0);
    } else {
        std::vector<std::thread> threads;
        for (std::size_t w = 1; w < workers; ++w) {
            threads.emplace_back(work, w);
        }
        work(0);
        for (auto& t : threads) {
            t.join();
        }
    }
    if (group_types != nullptr) {
        for (auto& wt : worker_types) {
            group_types->merge(wt);
        }
    }
    for (auto& wp : worker_problems) {
        problems.insert(problems.end(), std::make_move_iterator(wp.begin()), std::make_move_iterator(wp.end()));
    }
    for (const auto& ww : worker_warnings) {
        for (const auto& w : ww) {
            problems.push_back({Severity::warning, w, ""});
        }
    }
    return devices;
}

// Vendor, device and class names through libpci, on one thread (its name
// cache is shared state); pci.ids is loaded by the first lookup, and what that
// load said (the warnings after the first `setup_warnings`) counts only where
// a name was wanted.
void name_pci_devices(LibPci& pci, std::size_t setup_warnings, std::vector<PciDevice>& devices, std::vector<Problem>& problems)
{
    bool looked_up = false;
    for (auto& dev : devices) {
        looked_up = looked_up || dev.vendor || dev.class16();
        if (dev.vendor) {
            dev.vendor_name = pci.vendor_name(*dev.vendor);
            if (dev.device) {
                dev.device_name = pci.device_name(*dev.vendor, *dev.device);
            }
        }
        if (auto c = dev.class16()) {
            dev.class_name = pci.class_name(*c);
        }
    }
    const auto& warnings = pci.warnings();
    const std::size_t shown = looked_up ? warnings.size() : std::min(setup_warnings, warnings.size());
    for (std::size_t i = 0; i < shown; ++i) {
        problems.push_back({Severity::warning, warnings[i], ""});
    }
}

// Network interfaces: one link per interface in /sys/class/net, whose
// target names the PCI function (.../0000:42:00.0/net/enp66s0f0). devices
// are sorted by address.
void attach_net_interfaces(const util::HostFs& fs, std::vector<PciDevice>& devices)
{
    auto net = fs.open_dir("/sys/class/net");
    if (!net) {
        return;
    }
    for (const auto& ifname : net->list(".")) {
        const auto target = net->link(ifname.c_str());
        if (!target) {
            continue;
        }
        const std::string path = util::join_host_path(net->path(), *target);
        const auto parent = parent_from_path(path);
        if (!parent) {
            continue; // a virtual interface (lo, bridges, bonds)
        }
        const auto it = std::lower_bound(devices.begin(), devices.end(), *parent,
                                         [](const PciDevice& d, const PciAddress& x) { return d.address < x; });
        if (it != devices.end() && it->address == *parent) {
            it->net_interfaces.push_back(ifname);
            it->net_links.push_back(read_net_link(fs, ifname));
        }
    }
}

} // namespace

Result<std::vector<PciDevice>> scan_pci_devices(const util::HostFs& fs, const GpuVendors& vendors, std::vector<Problem>& problems,
                                                GroupTypes* group_types)
{
    if (!fs.is_dir(k_pci_devices)) {
        return tl::unexpected(
            Error(Errc::usage, "no PCI devices in sysfs under " + fs.root().string() + " (" + k_pci_devices + " is missing)")
                .with_hint("--root must point at a host root with /sys (a copy of a host, or / on the host itself)"));
    }
    auto names = fs.list_dir(k_pci_devices);
    if (!names) {
        return tl::unexpected(names.error());
    }
    auto devices_dir = fs.open_dir(k_pci_devices);
    if (!devices_dir) {
        return tl::unexpected(devices_dir.error());
    }

    std::optional<util::HostDir> sys_devices;
    if (auto d = fs.open_dir("/sys/devices")) {
        sys_devices = std::move(*d);
    }
    const auto entries = pci_entries(*names, problems);
    auto sysfs_local = fs.local("/sys/bus/pci");
    const std::string sysfs_path = sysfs_local ? sysfs_local->string() : std::string("/nonexistent");
    // pci.ids is parsed when the first name is looked up, on this thread: a
    // thread of its own for the parse gets a malloc arena of its own, whose
    // trimming reads /proc/sys/vm/overcommit_memory outside the root.
    LibPci name_db(sysfs_path);
    const std::size_t setup_warnings = name_db.warnings().size();
    std::vector<PciDevice> devices;
    {
        std::optional<util::HostDir> groups;
        if (group_types != nullptr) {
            if (auto d = fs.open_dir("/sys/kernel/iommu_groups")) {
                groups = std::move(*d);
            }
        }
        devices = read_pci_devices(fs, *devices_dir, sys_devices, entries, sysfs_path, vendors, groups ? &*groups : nullptr, group_types,
                                   problems);
    }
    name_pci_devices(name_db, setup_warnings, devices, problems);
    std::sort(devices.begin(), devices.end(), [](const PciDevice& x, const PciDevice& y) { return x.address < y.address; });
    attach_net_interfaces(fs, devices);
    return devices;
}

std::map<int, IommuGroup> scan_iommu_groups(const util::HostFs& fs)
{
    return scan_iommu_groups(fs, [](int) { return true; });
}

std::map<int, IommuGroup> scan_iommu_groups(const util::HostFs& fs, const std::function<bool(int)>& list_members, const GroupTypes& known)
{
    std::map<int, IommuGroup> groups;
    auto top = fs.open_dir("/sys/kernel/iommu_groups");
    if (!top) {
        return groups;
    }
    for (const auto& name : top->list(".")) {
        const auto number = util::parse_int(name);
        if (!number || *number < 0) {
            continue;
        }
        // "N/devices" and "N/type" relative to the one open iommu_groups
        // directory: no descriptor of its own per group.
        IommuGroup group;
        group.number = static_cast<int>(*number);
        if (list_members(group.number)) {
            for (const auto& d : top->list((name + "/devices").c_str())) {
                if (auto addr = PciAddress::parse(d)) {
                    group.devices.push_back(*addr);
                }
            }
        }
        std::sort(group.devices.begin(), group.devices.end());
        // A type read with the functions was read at "N/type" too.
        const auto it = known.find(group.number);
        group.type = it != known.end() && name == std::to_string(group.number) ? it->second : top->attr((name + "/type").c_str());
        groups.emplace(group.number, std::move(group));
    }
    return groups;
}

namespace {

// Which IOMMU groups scan lists the devices/ directory of. The kernel makes
// a function's iommu_group link and its entry in the group's devices/ in one
// step (drivers/iommu/iommu.c, iommu_group_add_device; docs/facts.md: IOMMU
// groups in sysfs), so the links of the scanned functions already give every
// membership. The listing is still read where it can say more: every group
// when a function has no iommu_group link (it may be listed somewhere), the
// groups a GPU card's functions are in (a member missing from
// /sys/bus/pci/devices changes the card's isolation verdict), and groups no
// scanned function links to.
std::function<bool(int)> groups_to_list(const std::vector<PciDevice>& devices, const GpuVendors& vendors)
{
    bool gap = false;
    std::set<std::string> gpu_slots;
    for (const auto& dev : devices) {
        gap = gap || !dev.iommu_group;
        if ((dev.is_display() || dev.is_gpu_switch(vendors)) && !dev.is_virtfn) {
            gpu_slots.insert(dev.address.slot());
        }
    }
    if (gap) {
        return [](int) { return true; };
    }
    auto linked = std::make_shared<std::set<int>>();
    auto must_list = std::make_shared<std::set<int>>();
    for (const auto& dev : devices) {
        linked->insert(*dev.iommu_group);
        if (!dev.is_virtfn && gpu_slots.contains(dev.address.slot())) {
            must_list->insert(*dev.iommu_group);
        }
    }
    return [linked, must_list](int number) { return must_list->contains(number) || !linked->contains(number); };
}

} // namespace

namespace {

// The kernel log's give-ups since boot for the functions of the cards and switches:
// read only when there is a card to judge (docs/facts.md: card-state).
void read_ready_timeouts(const util::HostFs& fs, Inventory& inv)
{
    if (inv.gpus.empty() && inv.nvswitches.empty()) {
        return;
    }
    const auto log = read_host_kernel_log(fs);
    inv.kernel_log_source = log.note ? *log.note : log.source;
    for (auto& t : format::kernel_log::ready_timeouts(format::kernel_log::since_last_boot(log.messages))) {
        const auto addr = PciAddress::parse(t.function);
        if (addr && (inv.gpu_of(*addr) != nullptr || inv.nvswitch_of(*addr) != nullptr)) {
            inv.ready_timeouts.push_back(std::move(t));
        }
    }
}

} // namespace

Result<Inventory> scan_host(const util::HostFs& fs, const util::CommandRunner& runner, const ScanData& data)
{
    Inventory inv;
    inv.kernel_cutoffs = data.cutoffs;
    GroupTypes group_types;
    auto devices = scan_pci_devices(fs, data.vendors, inv.problems, &group_types);
    if (!devices) {
        return tl::unexpected(devices.error());
    }
    inv.devices = std::move(*devices);
    inv.groups = scan_iommu_groups(fs, groups_to_list(inv.devices, data.vendors), group_types);
    // Group membership from the devices' own links fills gaps in the group
    // directory listing, and vice versa.
    std::map<PciAddress, int> group_of;
    for (const auto& [number, group] : inv.groups) {
        for (const auto& member : group.devices) {
            group_of.emplace(member, number);
        }
    }
    for (auto& dev : inv.devices) {
        if (!dev.iommu_group) {
            if (auto it = group_of.find(dev.address); it != group_of.end()) {
                dev.iommu_group = it->second;
            }
        } else if (!inv.groups.contains(*dev.iommu_group)) {
            IommuGroup group;
            group.number = *dev.iommu_group;
            inv.groups.emplace(group.number, group);
        }
        if (dev.iommu_group) {
            auto& members = inv.groups[*dev.iommu_group].devices;
            if (std::find(members.begin(), members.end(), dev.address) == members.end()) {
                members.push_back(dev.address);
                std::sort(members.begin(), members.end());
            }
        }
    }
    inv.host = scan_host_info(fs, runner);
    inv.host.iommu.groups = static_cast<int>(inv.groups.size());
    inv.host.iommu.enabled = !inv.groups.empty();
    if (!inv.host.iommu.enabled) {
        inv.host.iommu.interrupt_remapping = std::nullopt;
    }
    inv.host.vgpu_evidence = detect_vgpu_host(fs, inv.devices, data.vendors);
    inv.gpus = find_gpu_cards(inv.devices, inv.groups, data.vendors);
    inv.nvswitches = find_nvswitches(inv.devices, inv.groups, data.vendors);
    inv.vendors = data.vendors;
    read_ready_timeouts(fs, inv);
    assign_profiles(inv, data.gpu_profiles);
    assess_readiness(inv);
    inv.runtime = scan_runtime_state(fs);
    scan_card_users(fs, inv);
    return inv;
}

} // namespace passthru::scan
