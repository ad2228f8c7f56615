// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/scanner.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "scan/libpci.hpp"
#include "scan/vgpu.hpp"
#include "util/strings.hpp"

namespace passthru::scan {

namespace {

constexpr const char* k_pci_devices = "/sys/bus/pci/devices";

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

PciDevice read_pci_device(const util::HostFs& fs, LibPci& pci, const util::HostDir& devices_dir,
                          const std::optional<util::HostDir>& sys_devices, const std::string& name, const PciAddress& addr,
                          std::vector<Problem>& problems)
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
    if (dev.is_display() || dev.vendor == k_vendor_nvidia) {
        dev.mem_bars = parse_pci_resource(dir->attr("resource").value_or("")).value_or(std::vector<MemBar>{});
    }
    dev.link = read_link(*dir, facts, config.size());
    read_reset_sriov_topology(*dir, facts, dev);
    return dev;
}

} // namespace

namespace {

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
                                        const util::HostDir* groups, GroupTypes* group_types, std::vector<Problem>& problems)
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
            devices[i] = read_pci_device(fs, pci, devices_dir, sys_devices, entries[i].first, entries[i].second, worker_problems[w]);
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

Result<std::vector<PciDevice>> scan_pci_devices(const util::HostFs& fs, std::vector<Problem>& problems, GroupTypes* group_types)
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
        devices = read_pci_devices(fs, *devices_dir, sys_devices, entries, sysfs_path, groups ? &*groups : nullptr, group_types, problems);
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
std::function<bool(int)> groups_to_list(const std::vector<PciDevice>& devices)
{
    bool gap = false;
    std::set<std::string> gpu_slots;
    for (const auto& dev : devices) {
        gap = gap || !dev.iommu_group;
        if ((dev.is_display() || dev.is_nvswitch()) && !dev.is_virtfn) {
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

Result<Inventory> scan_host(const util::HostFs& fs, const util::CommandRunner& runner, const KernelCutoffs& cutoffs)
{
    Inventory inv;
    inv.kernel_cutoffs = cutoffs;
    GroupTypes group_types;
    auto devices = scan_pci_devices(fs, inv.problems, &group_types);
    if (!devices) {
        return tl::unexpected(devices.error());
    }
    inv.devices = std::move(*devices);
    inv.groups = scan_iommu_groups(fs, groups_to_list(inv.devices), group_types);
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
    inv.host.vgpu_evidence = detect_vgpu_host(fs, inv.devices);
    inv.gpus = find_gpu_cards(inv.devices, inv.groups);
    inv.nvswitches = find_nvswitches(inv.devices, inv.groups);
    assess_readiness(inv);
    inv.runtime = scan_runtime_state(fs);
    return inv;
}

} // namespace passthru::scan
