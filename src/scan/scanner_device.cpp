// SPDX-License-Identifier: GPL-2.0-or-later
// One PCI function's sysfs directory read into a PciDevice (detail::read_pci_device):
// uevent, the attributes, the config space through libpci, the driver and IOMMU
// group links, the PCIe link, reset methods, SR-IOV and the place in the topology.
#include <charconv>
#include <string_view>
#include <utility>

#include "scan/libpci.hpp"
#include "scan/scanner.hpp"
#include "scan/scanner_detail.hpp"
#include "util/strings.hpp"

namespace passthru::scan {

namespace {

using detail::k_pci_devices;
using detail::parent_from_path;

std::optional<double> parse_gts(const std::optional<std::string>& speed)
{
    // "8.0 GT/s PCIe", "2.5 GT/s", "Unknown". No exceptions: every SR-IOV
    // virtual function reports "Unknown", and a throw per function was a
    // measurable part of a large scan (bench/PROFILE.md).
    if (!speed) {
        return std::nullopt;
    }
    const std::string_view text = *speed;
    const std::string_view number = text.substr(0, text.find(' '));
    double value = 0;
    const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (number.empty() || ec != std::errc() || ptr != number.data() + number.size() || value <= 0) {
        return std::nullopt;
    }
    return value;
}

// What one read of a PCI function's `uevent` says: the kernel writes
// DRIVER=<name> when a driver is bound (drivers/base/core.c, dev_uevent) and
// PCI_CLASS, PCI_ID and PCI_SUBSYS_ID from the same pci_dev fields the
// vendor/device/class/subsystem_* attributes and the driver link show
// (drivers/pci/pci-driver.c, pci_uevent; docs/facts.md: sysfs uevent).
struct Uevent
{
    bool from_kernel = false; // read, with a well-formed PCI_ID line
    std::optional<std::uint16_t> vendor;
    std::optional<std::uint16_t> device;
    std::optional<std::uint32_t> class_code;
    std::optional<std::uint16_t> subsystem_vendor;
    std::optional<std::uint16_t> subsystem_device;
    std::optional<std::string> driver;
};

// "10DE:1E07" -> both halves; nullopt unless both are 16-bit hex.
std::optional<std::pair<std::uint16_t, std::uint16_t>> hex_pair(std::string_view text)
{
    const auto colon = text.find(':');
    if (colon == std::string_view::npos) {
        return std::nullopt;
    }
    const auto a = util::parse_hex(text.substr(0, colon));
    const auto b = util::parse_hex(text.substr(colon + 1));
    if (!a || !b || *a > 0xffff || *b > 0xffff) {
        return std::nullopt;
    }
    return std::pair{static_cast<std::uint16_t>(*a), static_cast<std::uint16_t>(*b)};
}

Uevent parse_uevent(const std::optional<std::string>& text)
{
    Uevent out;
    if (!text) {
        return out;
    }
    std::string_view rest = *text;
    while (!rest.empty()) {
        const auto nl = rest.find('\n');
        const std::string_view line = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
        const auto eq = line.find('=');
        if (eq == std::string_view::npos) {
            continue;
        }
        const std::string_view key = line.substr(0, eq);
        const std::string_view value = line.substr(eq + 1);
        if (key == "PCI_ID") {
            if (auto ids = hex_pair(value)) {
                out.vendor = ids->first;
                out.device = ids->second;
                out.from_kernel = true;
            }
        } else if (key == "PCI_SUBSYS_ID") {
            if (auto ids = hex_pair(value)) {
                out.subsystem_vendor = ids->first;
                out.subsystem_device = ids->second;
            }
        } else if (key == "PCI_CLASS") {
            if (auto code = util::parse_hex(value); code && *code <= 0xffffff) {
                out.class_code = static_cast<std::uint32_t>(*code);
            }
        } else if (key == "DRIVER" && !value.empty()) {
            out.driver = std::string(value);
        }
    }
    return out;
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
        std::string shown;
        for (unsigned char c : text->substr(0, 32)) {
            if (c >= 0x20 && c < 0x7f) {
                shown += static_cast<char>(c);
            } else {
                shown += "\\x" + util::hex(c, 2);
            }
        }
        problems.push_back({Severity::warning, addr + ": cannot parse sysfs attribute '" + name + "' (\"" + shown + "\")",
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

} // namespace

namespace detail {

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

} // namespace detail

namespace {

// Reads one function's sysfs directory. Runs on worker threads: only sysfs
// reads here, no libpci (its name cache is not thread-safe).
std::optional<std::string> speed_text(const std::optional<int>& code)
{
    // The kernel's spellings in current_link_speed / max_link_speed.
    static constexpr const char* k_speeds[] = {"2.5 GT/s PCIe",  "5.0 GT/s PCIe",  "8.0 GT/s PCIe",
                                               "16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe"};
    if (!code) {
        return std::nullopt;
    }
    if (*code < 1 || *code > 6) {
        return std::string("Unknown");
    }
    return std::string(k_speeds[*code - 1]);
}

// The function's sysfs directory. The kernel's link target gives its place
// in the topology; the directory is opened below the open /sys/devices with
// no symlink followed (a walk of the few components under it), else through
// the link, confined to the root.
Result<util::HostDir> open_device_dir(const util::HostFs& fs, const util::HostDir& devices_dir,
                                      const std::optional<util::HostDir>& sys_devices, const std::string& name)
{
    std::optional<std::string> known;
    if (auto link = devices_dir.link(name.c_str())) {
        known = util::join_host_path(devices_dir.path(), *link);
        if (sys_devices && known->size() > sys_devices->path().size() + 1 && known->starts_with(sys_devices->path())
            && (*known)[sys_devices->path().size()] == '/') {
            if (auto dir = sys_devices->subdir(known->substr(sys_devices->path().size() + 1))) {
                return std::move(*dir);
            }
        }
    }
    return fs.open_dir(std::string(k_pci_devices) + "/" + name, known);
}

// Vendor, device and class: from uevent, else from their attributes.
void read_ids(const util::HostDir& dir, const Uevent& ue, const std::string& a, PciDevice& dev, std::vector<Problem>& problems)
{
    if (ue.from_kernel) {
        dev.vendor = ue.vendor;
        dev.device = ue.device;
    } else {
        dev.vendor = hex_attr<std::uint16_t>(dir, "vendor", 0xffff, a, problems);
        dev.device = hex_attr<std::uint16_t>(dir, "device", 0xffff, a, problems);
    }
    dev.class_code = ue.class_code ? ue.class_code : hex_attr<std::uint32_t>(dir, "class", 0xffffff, a, problems);
}

// Subsystem ids and revision: from uevent or the config space, else from their attributes.
void read_subsystem_and_revision(const util::HostDir& dir, const Uevent& ue, const LibPci::ConfigFacts& facts, const std::string& a,
                                 PciDevice& dev, std::vector<Problem>& problems)
{
    if (ue.subsystem_vendor && ue.subsystem_device) {
        dev.subsystem_vendor = ue.subsystem_vendor;
        dev.subsystem_device = ue.subsystem_device;
    } else if (facts.subsystem_vendor && facts.subsystem_device) {
        dev.subsystem_vendor = facts.subsystem_vendor;
        dev.subsystem_device = facts.subsystem_device;
    } else {
        // Bridges keep theirs in an SSVID capability, which the kernel
        // reads for them: take its attributes.
        dev.subsystem_vendor = hex_attr<std::uint16_t>(dir, "subsystem_vendor", 0xffff, a, problems);
        dev.subsystem_device = hex_attr<std::uint16_t>(dir, "subsystem_device", 0xffff, a, problems);
    }
    dev.revision = facts.revision ? facts.revision : hex_attr<std::uint8_t>(dir, "revision", 0xff, a, problems);
}

// The bound driver and its override, the IOMMU group, the NUMA node and boot_vga.
void read_binding_and_placement(const util::HostDir& dir, const Uevent& ue, PciDevice& dev)
{
    if (ue.from_kernel) {
        dev.driver = ue.driver;
    } else if (auto drv = dir.link("driver")) {
        dev.driver = std::string(util::base_name(*drv));
    }
    if (auto ov = dir.attr("driver_override"); ov && *ov != "(null)" && !ov->empty()) {
        dev.driver_override = *ov;
    }
    dev.iommu_group = group_from_link(dir.link("iommu_group"));
    if (auto node = int_attr(dir, "numa_node"); node && *node >= 0) {
        dev.numa_node = node;
    }
    if (dev.is_display()) {
        // boot_vga exists only on VGA-class functions.
        if (auto boot = dir.attr("boot_vga")) {
            dev.boot_vga = *boot == "1";
        }
    }
}

// PCIe link speed and width: from the config space, else (too few config
// bytes to know) what the kernel reports; nullopt when nothing is known.
std::optional<LinkInfo> read_link(const util::HostDir& dir, const LibPci::ConfigFacts& facts, std::size_t config_size)
{
    LinkInfo link;
    if (facts.link_speed) {
        link.speed = speed_text(facts.link_speed);
        link.max_speed = speed_text(facts.max_link_speed);
        link.width = facts.link_width;
        link.max_width = facts.max_link_width;
    } else if (config_size < 256) {
        link.speed = dir.attr("current_link_speed");
        if (link.speed) {
            link.max_speed = dir.attr("max_link_speed");
            link.width = int_attr(dir, "current_link_width");
            link.max_width = int_attr(dir, "max_link_width");
        }
    }
    // A function without link registers (a Root Complex Integrated Endpoint
    // such as an iGPU on the root bus, a VF, a type without a link) reads as
    // speed "Unknown", width 0 and maximum width 255 (docs/facts.md:
    // pcie-link): no link at all, not a narrow or a slow one.
    // A port whose link is down keeps its real maximum width and shows
    // width 0: that is a link, and stays one.
    const auto real_width = [](const std::optional<int>& w) { return w && *w >= 1 && *w <= 32; };
    link.speed_gts = parse_gts(link.speed);
    link.max_speed_gts = parse_gts(link.max_speed);
    const bool no_link = !real_width(link.max_width) && !real_width(link.width) && !link.speed_gts && !link.max_speed_gts;
    if (no_link || !(link.speed || link.max_speed || link.width || link.max_width)) {
        return std::nullopt;
    }
    return link;
}

// Reset methods, SR-IOV (a virtual function's parent, or a physical
// function's VF counts), ACS and the place in the topology.
void read_reset_sriov_topology(const util::HostDir& dir, const LibPci::ConfigFacts& facts, PciDevice& dev)
{
    if (auto reset = dir.attr("reset_method")) {
        dev.reset_methods = util::split(*reset, " ");
    }
    if (auto physfn = dir.link("physfn")) {
        dev.is_virtfn = true;
        dev.physfn = PciAddress::parse(util::base_name(*physfn));
    } else if (facts.sriov.value_or(true)) {
        dev.sriov_totalvfs = int_attr(dir, "sriov_totalvfs");
        if (dev.sriov_totalvfs) {
            dev.sriov_numvfs = int_attr(dir, "sriov_numvfs");
        }
    }
    dev.has_acs = facts.acs.value_or(false);
    dev.parent = parent_from_path(dev.sysfs_path);
    if (auto c = dev.class16()) {
        // PCI-to-PCI bridges and PCIe ports (0604, semi-transparent 0609):
        // what the kernel's vfio accepts next to a passed device.
        dev.is_bridge = *c == pci_class::bridge_pci || *c == 0x0609;
    }
}

} // namespace

namespace detail {

PciDevice read_pci_device(const util::HostFs& fs, LibPci& pci, const util::HostDir& devices_dir,
                          const std::optional<util::HostDir>& sys_devices, const std::string& name, const PciAddress& addr,
                          const GpuVendors& vendors, std::vector<Problem>& problems)
{
    PciDevice dev;
    dev.address = addr;
    auto dir = open_device_dir(fs, devices_dir, sys_devices, name);
    if (!dir) {
        problems.push_back({Severity::warning, name + ": cannot open its sysfs directory (" + dir.error().what() + ")",
                            "the device is listed without details"});
        return dev;
    }
    dev.sysfs_path = dir->path();
    const std::string a = addr.str();
    // One read of uevent gives ids, class, subsystem and driver; the
    // attributes and the driver link remain the fallback for what it lacks
    // (trees copied without it).
    const Uevent ue = parse_uevent(dir->attr("uevent"));
    read_ids(*dir, ue, a, dev, problems);
    // One read of the config space gives what would otherwise be nine
    // attribute files (subsystem, revision, link status and capabilities,
    // ACS, SR-IOV); the attributes remain the fallback when the bytes are
    // short (an unprivileged read returns 64 bytes).
    std::string config = dir->read("config", 4096).value_or(std::string());
    const auto facts = pci.parse_config(addr, config);
    read_subsystem_and_revision(*dir, ue, facts, a, dev, problems);
    read_binding_and_placement(*dir, ue, dev);
    if (dev.is_display() || vendors.find(dev.vendor) != nullptr) {
        dev.mem_bars = parse_pci_resource(dir->attr("resource").value_or("")).value_or(std::vector<MemBar>{});
        dev.power_state = dir->attr("power_state");
        dev.config_all_ones = config.size() >= 4 && config.substr(0, 4) == std::string(4, '\xff');
    }
    dev.link = read_link(*dir, facts, config.size());
    read_reset_sriov_topology(*dir, facts, dev);
    if (dev.base_class() == pci_class::base_bridge && !dev.is_bridge) {
        dev.has_bars = any_assigned_bar(dir->attr("resource").value_or(""));
    }
    return dev;
}

} // namespace detail

} // namespace passthru::scan
