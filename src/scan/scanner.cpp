// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/scanner.hpp"

#include <algorithm>
#include <set>

#include "scan/libpci.hpp"
#include "util/strings.hpp"

namespace passthru::scan {

namespace {

constexpr const char* k_pci_devices = "/sys/bus/pci/devices";

std::optional<double> parse_gts(const std::optional<std::string>& speed)
{
    // "8.0 GT/s PCIe", "2.5 GT/s", "Unknown"
    if (!speed) {
        return std::nullopt;
    }
    const auto parts = util::split(*speed, " ");
    if (parts.empty()) {
        return std::nullopt;
    }
    try {
        std::size_t used = 0;
        const double value = std::stod(parts[0], &used);
        if (used != parts[0].size() || value <= 0) {
            return std::nullopt;
        }
        return value;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

template<typename T>
std::optional<T> hex_attr(const util::HostDir& dir, const char* name, std::uint64_t max, const std::string& addr,
                          std::vector<Problem>& problems)
{
    auto text = dir.attr(name);
    if (!text) {
        if (std::string_view(name) == "vendor" || std::string_view(name) == "device" || std::string_view(name) == "class") {
            problems.push_back({Severity::warning, addr + ": sysfs attribute '" + name + "' is missing",
                                "check that sysfs is complete; the device is listed without it"});
        }
        return std::nullopt;
    }
    const auto value = util::parse_hex(*text);
    if (!value || *value > max) {
        problems.push_back({Severity::warning, addr + ": cannot parse sysfs attribute '" + name + "' (\"" + *text + "\")",
                            "the device is listed without it"});
        return std::nullopt;
    }
    return static_cast<T>(*value);
}

std::optional<int> int_attr(const util::HostDir& dir, const char* name)
{
    auto text = dir.attr(name);
    if (!text) {
        return std::nullopt;
    }
    const auto value = util::parse_int(*text);
    if (!value || *value < -1 || *value > 1'000'000) {
        return std::nullopt;
    }
    return static_cast<int>(*value);
}

std::optional<int> group_from_link(const std::optional<std::string>& link)
{
    if (!link) {
        return std::nullopt;
    }
    const auto value = util::parse_int(util::base_name(*link));
    if (!value || *value < 0) {
        return std::nullopt;
    }
    return static_cast<int>(*value);
}

// The nearest PCI function above the device in the sysfs device path.
std::optional<PciAddress> parent_from_path(const std::string& path)
{
    const auto parts = util::split(path, "/");
    if (parts.size() < 2) {
        return std::nullopt;
    }
    for (std::size_t i = parts.size() - 1; i-- > 0;) {
        if (auto addr = PciAddress::parse(parts[i])) {
            return addr;
        }
    }
    return std::nullopt;
}

} // namespace

Result<std::vector<PciDevice>> scan_pci_devices(const util::HostFs& fs, std::vector<Problem>& problems)
{
    if (!fs.is_dir(k_pci_devices)) {
        return tl::unexpected(Error(Errc::usage, "no PCI devices in sysfs under " + fs.root().string() + " (" + k_pci_devices + " is missing)")
            .with_hint("--root must point at a host root with /sys (a copy of a host, or / on the host itself)"));
    }
    auto names = fs.list_dir(k_pci_devices);
    if (!names) {
        return tl::unexpected(names.error());
    }

    auto sysfs_local = fs.local("/sys/bus/pci");
    LibPci pci(sysfs_local ? sysfs_local->string() : std::string("/nonexistent"));

    std::vector<PciDevice> devices;
    devices.reserve(names->size());
    for (const auto& name : *names) {
        auto addr = PciAddress::parse(name);
        if (!addr) {
            problems.push_back({Severity::warning, "ignoring unexpected entry '" + name + "' in " + k_pci_devices, ""});
            continue;
        }
        auto dir = fs.open_dir(std::string(k_pci_devices) + "/" + name);
        if (!dir) {
            problems.push_back({Severity::warning, name + ": cannot open its sysfs directory (" + dir.error().what() + ")",
                                "the device is listed without details"});
            PciDevice dev;
            dev.address = *addr;
            devices.push_back(std::move(dev));
            continue;
        }
        PciDevice dev;
        dev.address = *addr;
        dev.sysfs_path = dir->path();
        const std::string a = addr->str();
        dev.vendor = hex_attr<std::uint16_t>(*dir, "vendor", 0xffff, a, problems);
        dev.device = hex_attr<std::uint16_t>(*dir, "device", 0xffff, a, problems);
        dev.class_code = hex_attr<std::uint32_t>(*dir, "class", 0xffffff, a, problems);
        dev.subsystem_vendor = hex_attr<std::uint16_t>(*dir, "subsystem_vendor", 0xffff, a, problems);
        dev.subsystem_device = hex_attr<std::uint16_t>(*dir, "subsystem_device", 0xffff, a, problems);
        dev.revision = hex_attr<std::uint8_t>(*dir, "revision", 0xff, a, problems);
        if (auto drv = dir->link("driver")) {
            dev.driver = std::string(util::base_name(*drv));
        }
        if (auto ov = dir->attr("driver_override"); ov && *ov != "(null)" && !ov->empty()) {
            dev.driver_override = *ov;
        }
        dev.iommu_group = group_from_link(dir->link("iommu_group"));
        if (auto node = int_attr(*dir, "numa_node"); node && *node >= 0) {
            dev.numa_node = node;
        }
        if (auto boot = dir->attr("boot_vga")) {
            dev.boot_vga = *boot == "1";
        }
        LinkInfo link;
        link.speed = dir->attr("current_link_speed");
        link.max_speed = dir->attr("max_link_speed");
        link.width = int_attr(*dir, "current_link_width");
        link.max_width = int_attr(*dir, "max_link_width");
        link.speed_gts = parse_gts(link.speed);
        link.max_speed_gts = parse_gts(link.max_speed);
        if (link.speed || link.max_speed || link.width || link.max_width) {
            dev.link = std::move(link);
        }
        if (auto reset = dir->attr("reset_method")) {
            dev.reset_methods = util::split(*reset, " ");
        }
        if (auto physfn = dir->link("physfn")) {
            dev.is_virtfn = true;
            dev.physfn = PciAddress::parse(util::base_name(*physfn));
        }
        dev.sriov_totalvfs = int_attr(*dir, "sriov_totalvfs");
        dev.sriov_numvfs = int_attr(*dir, "sriov_numvfs");
        if (dir->has("net")) {
            if (auto ifaces = fs.list_dir(dir->path() + "/net")) {
                dev.net_interfaces = std::move(*ifaces);
            }
        }
        dev.parent = parent_from_path(dev.sysfs_path);
        if (dev.vendor) {
            dev.vendor_name = pci.vendor_name(*dev.vendor);
            if (dev.device) {
                dev.device_name = pci.device_name(*dev.vendor, *dev.device);
            }
        }
        if (auto c = dev.class16()) {
            dev.class_name = pci.class_name(*c);
            // PCI-to-PCI bridges and PCIe ports (0604, semi-transparent 0609):
            // what the kernel's vfio accepts next to a passed device.
            dev.is_bridge = *c == pci_class::bridge_pci || *c == 0x0609;
        }
        if (dev.is_bridge) {
            // ACS on the ports is what splits groups; only bridges need the
            // config-space read.
            dev.has_acs = pci.has_acs(*addr).value_or(false);
        }
        devices.push_back(std::move(dev));
    }
    for (const auto& w : pci.warnings()) {
        problems.push_back({Severity::warning, w, ""});
    }
    std::sort(devices.begin(), devices.end(), [](const PciDevice& x, const PciDevice& y) { return x.address < y.address; });
    return devices;
}

std::map<int, IommuGroup> scan_iommu_groups(const util::HostFs& fs)
{
    std::map<int, IommuGroup> groups;
    auto names = fs.list_dir("/sys/kernel/iommu_groups");
    if (!names) {
        return groups;
    }
    for (const auto& name : *names) {
        const auto number = util::parse_int(name);
        if (!number || *number < 0) {
            continue;
        }
        IommuGroup group;
        group.number = static_cast<int>(*number);
        const std::string base = "/sys/kernel/iommu_groups/" + name;
        if (auto devs = fs.list_dir(base + "/devices")) {
            for (const auto& d : *devs) {
                if (auto addr = PciAddress::parse(d)) {
                    group.devices.push_back(*addr);
                }
            }
        }
        std::sort(group.devices.begin(), group.devices.end());
        group.type = fs.read_attr(base + "/type");
        groups.emplace(group.number, std::move(group));
    }
    return groups;
}

Result<Inventory> scan_host(const util::HostFs& fs, const util::CommandRunner& runner)
{
    Inventory inv;
    auto devices = scan_pci_devices(fs, inv.problems);
    if (!devices) {
        return tl::unexpected(devices.error());
    }
    inv.devices = std::move(*devices);
    inv.groups = scan_iommu_groups(fs);
    // Group membership from the devices' own links fills gaps in the group
    // directory listing, and vice versa.
    for (auto& dev : inv.devices) {
        if (!dev.iommu_group) {
            for (const auto& [number, group] : inv.groups) {
                if (std::find(group.devices.begin(), group.devices.end(), dev.address) != group.devices.end()) {
                    dev.iommu_group = number;
                }
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
    inv.gpus = find_gpu_cards(inv.devices, inv.groups);
    assess_readiness(inv);
    return inv;
}

std::vector<GpuCard> find_gpu_cards(const std::vector<PciDevice>& devices, const std::map<int, IommuGroup>& groups)
{
    // Slots holding a display-class function (never a virtual function).
    std::map<std::string, GpuCard> cards;
    for (const auto& dev : devices) {
        if (!dev.is_display() || dev.is_virtfn || !dev.vendor) {
            continue;
        }
        auto& card = cards[dev.address.slot()];
        card.slot = dev.address.slot();
        card.vendor = *dev.vendor;
    }
    for (const auto& dev : devices) {
        auto it = cards.find(dev.address.slot());
        if (it == cards.end() || dev.is_virtfn) {
            continue;
        }
        auto& card = it->second;
        card.functions.push_back(dev.address);
        card.boot_vga = card.boot_vga || dev.boot_vga;
        if (!card.numa_node && dev.numa_node) {
            card.numa_node = dev.numa_node;
        }
        if (dev.iommu_group && std::find(card.iommu_groups.begin(), card.iommu_groups.end(), *dev.iommu_group) == card.iommu_groups.end()) {
            card.iommu_groups.push_back(*dev.iommu_group);
        }
    }
    auto find_dev = [&devices](const PciAddress& a) -> const PciDevice* {
        const auto it = std::lower_bound(devices.begin(), devices.end(), a,
                                         [](const PciDevice& d, const PciAddress& x) { return d.address < x; });
        return (it != devices.end() && it->address == a) ? &*it : nullptr;
    };
    std::vector<GpuCard> out;
    for (auto& [slot, card] : cards) {
        std::sort(card.iommu_groups.begin(), card.iommu_groups.end());
        std::set<PciAddress> seen;
        if (card.iommu_groups.empty()) {
            card.isolation = Isolation::unknown;
        } else {
            card.isolation = Isolation::clean;
            for (int number : card.iommu_groups) {
                const auto git = groups.find(number);
                if (git == groups.end()) {
                    continue;
                }
                for (const auto& member : git->second.devices) {
                    if (std::find(card.functions.begin(), card.functions.end(), member) != card.functions.end()) {
                        continue;
                    }
                    if (!seen.insert(member).second) {
                        continue;
                    }
                    const PciDevice* dev = find_dev(member);
                    if (dev != nullptr && dev->is_bridge_like()) {
                        continue;
                    }
                    if (cards.contains(member.slot()) && !(dev != nullptr && dev->is_virtfn)) {
                        card.shares_with.push_back(member);
                        continue;
                    }
                    card.other_endpoints.push_back(member);
                    if (dev == nullptr || dev->is_storage() || dev->is_network()) {
                        card.host_critical.push_back(member);
                    }
                }
            }
            if (!card.other_endpoints.empty()) {
                card.isolation = Isolation::shared;
            } else if (!card.shares_with.empty()) {
                card.isolation = Isolation::shared_with_gpu;
            }
        }
        out.push_back(std::move(card));
    }
    return out;
}

} // namespace passthru::scan
