// SPDX-License-Identifier: GPL-2.0-or-later
#include "apply/verify.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include "format/pve_config.hpp"
#include "format/pve_mapping.hpp"
#include "plan/after_step.hpp"
#include "scan/boot_loader.hpp"
#include "scan/group_rule.hpp"
#include "util/strings.hpp"

namespace passthru::apply {

namespace {

constexpr std::string_view k_vfio = "vfio-pci";

std::string config_path(std::uint64_t vmid)
{
    return plan::qm_config_path(std::to_string(vmid));
}

// Every PCI id the current config of a VM passes (raw hostpci ids and this
// node's paths of the cluster mappings it names): the same rule as plan.
std::vector<std::string> passed_ids(const util::HostFs& fs, const std::string& config_text)
{
    std::optional<format::pve::PciMappingFile> mappings;
    if (auto text = fs.read_file("/etc/pve/mapping/pci.cfg")) {
        mappings = format::pve::PciMappingFile::parse(*text);
    }
    const auto hostname = fs.read_attr("/etc/hostname");
    const auto node = hostname ? format::pve::node_name_from_hostname(*hostname) : std::nullopt;
    std::vector<std::string> ids;
    for (const auto& passed :
         format::pve::passed_ids(format::pve::VmConfig::parse(config_text), "", mappings ? &*mappings : nullptr, node)) {
        ids.insert(ids.end(), passed.ids.begin(), passed.ids.end());
    }
    return ids;
}

bool covered_by(const std::vector<std::string>& ids, const scan::PciAddress& addr)
{
    return std::any_of(ids.begin(), ids.end(), [&](const std::string& id) { return format::pve::hostpci_id_covers(id, addr.str()); });
}

} // namespace

bool VerifyReport::all_ok() const
{
    return iommu_on && std::all_of(checks.begin(), checks.end(), [](const VerifyCheck& c) { return c.ok; });
}

Result<std::vector<scan::PciAddress>> vm_config_functions(const scan::Inventory& inventory, const util::HostFs& fs, std::uint64_t vmid)
{
    auto text = fs.read_file(config_path(vmid));
    if (!text) {
        return fail(Errc::not_found, "VM " + std::to_string(vmid) + " has no config (" + config_path(vmid) + ")");
    }
    const std::vector<std::string> ids = passed_ids(fs, *text);
    std::vector<scan::PciAddress> out;
    for (const auto& d : inventory.devices) {
        if (covered_by(ids, d.address)) {
            out.push_back(d.address);
        }
    }
    return out;
}

namespace {

// Adds one check to a report; the fix is kept for failed checks only.
struct Checks
{
    VerifyReport& rep;
    void add(bool ok, std::string what, std::string fix = {}) const
    {
        rep.checks.push_back(VerifyCheck{ok, std::move(what), ok ? std::string() : std::move(fix)});
    }
    // Neither proven nor failed (not checked, a group a running VM holds).
    void note(std::string what) const { rep.checks.push_back(VerifyCheck{true, std::move(what), {}, true}); }
};

// Kernel command line: the arguments the plan added must be active.
void check_kernel_args(const scan::Inventory& inventory, const util::HostFs& fs, const VerifyTarget& target, const Checks& c)
{
    if (target.kernel_args.empty()) {
        return;
    }
    const std::string cmdline = inventory.host.cmdline.value_or("");
    const auto active = util::split(cmdline, " \t\n");
    std::vector<std::string> missing;
    for (const auto& arg : target.kernel_args) {
        if (std::find(active.begin(), active.end(), arg) == active.end()) {
            missing.push_back(arg);
        }
    }
    if (missing.empty()) {
        c.add(true, "the kernel command line carries " + util::join(target.kernel_args, " "));
    } else {
        c.add(false, "the running kernel's command line lacks " + util::join(missing, " "),
              scan::explain_missing_args(scan::boot_loader(inventory.host.bootloader), fs, missing).fix);
    }
}

// Each selected function on vfio-pci; returns the IOMMU groups they are in.
std::set<int> check_bindings(const scan::Inventory& inventory, const VerifyTarget& target, const Checks& c)
{
    std::set<int> groups;
    for (const auto& addr : target.functions) {
        const auto* dev = inventory.find(addr);
        if (dev == nullptr) {
            c.add(false, addr.str() + " is not on the PCI bus",
                  "check that the card is seated and powered; if the slot address changed, plan and apply again");
            continue;
        }
        if (dev->driver && *dev->driver == k_vfio) {
            c.add(true, addr.str() + " is bound to vfio-pci");
        } else if (!dev->driver) {
            c.add(false, addr.str() + " has no driver: vfio-pci did not claim it",
                  "check /etc/modprobe.d/passthru-vfio.conf and that the initramfs was rebuilt (update-initramfs -u -k all) before "
                  "the reboot; 'modprobe vfio-pci' binds it now if its id or driver_override is set");
        } else {
            c.add(false, addr.str() + " is bound to the host driver " + *dev->driver + ", not vfio-pci",
                  *dev->driver
                      + " claimed it before vfio-pci: check the softdep and blacklist lines in /etc/modprobe.d/passthru-vfio.conf, "
                        "rebuild the initramfs (update-initramfs -u -k all) and reboot");
        }
        if (dev->iommu_group) {
            groups.insert(*dev->iommu_group);
        } else {
            c.add(false, addr.str() + " is in no IOMMU group", "the IOMMU does not cover this device; check the firmware's IOMMU settings");
        }
    }
    return groups;
}

// The group's /dev/vfio node exists, and no other endpoint of the group is
// on a host driver, or VFIO refuses the group ("group is not viable").
void check_group(const scan::Inventory& inventory, const util::HostFs& fs, const std::set<scan::PciAddress>& selected, int g,
                 const Checks& c)
{
    const std::string node = "/dev/vfio/" + std::to_string(g);
    if (fs.exists(node)) {
        c.add(true, node + " exists");
    } else {
        c.add(false, node + " is missing",
              "the group is not usable by VFIO: every device in group " + std::to_string(g)
                  + " must be bound to vfio-pci (or have no driver)");
    }
    auto it = inventory.groups.find(g);
    if (it == inventory.groups.end()) {
        return;
    }
    for (const auto& addr : it->second.devices) {
        if (selected.count(addr) != 0U) {
            continue;
        }
        const auto* dev = inventory.find(addr);
        if (scan::group_member(dev) == scan::GroupMember::goes_along
            || (dev != nullptr && !dev->is_bridge_like() && dev->base_class() == scan::pci_class::base_bridge && dev->driver == k_vfio
                && dev->has_bars == std::optional<bool>(false))) {
            c.add(true, addr.str() + " in IOMMU group " + std::to_string(g) + " " + std::string(scan::k_goes_along_why) + " ("
                            + (dev->driver ? "on vfio-pci" : "unbound") + ")");
            continue;
        }
        if (dev == nullptr || dev->is_bridge_like() || !dev->driver || *dev->driver == k_vfio || *dev->driver == "pci-stub"
            || *dev->driver == "pcieport") {
            continue;
        }
        c.add(false, "IOMMU group " + std::to_string(g) + " also holds " + addr.str() + " on the host driver " + *dev->driver,
              "the group is not viable for VFIO while a host driver owns one of its devices; pass " + addr.str()
                  + " too, or move the card to a slot with its own group");
    }
}

// ---- what VFIO says of a group (docs/facts.md: vfio-api) ------------------

std::string errno_text(int err)
{
    return std::strerror(err);
}

// The guest name of QEMU's "-name NAME[,opts]" (or "-name guest=NAME,...").
std::string qemu_guest_name(const std::string& arg)
{
    constexpr std::string_view guest = "guest=";
    std::string name = arg.substr(0, arg.find(','));
    if (name.starts_with(guest)) {
        name.erase(0, guest.size());
    }
    return name;
}

// "process 4242 (kvm, VM 101, win11)": a process that holds a VFIO node, from
// its comm and its command line's Proxmox "-id N" and QEMU "-name NAME".
std::string describe_process(const util::HostFs& fs, const std::string& pid)
{
    std::string out = "process " + pid;
    std::vector<std::string> about;
    if (auto comm = fs.read_attr("/proc/" + pid + "/comm")) {
        about.push_back(*comm);
    }
    if (auto cmdline = fs.read_file("/proc/" + pid + "/cmdline")) {
        const auto args = util::split(*cmdline, std::string_view("\0", 1));
        std::string id;
        std::string name;
        for (std::size_t i = 0; i + 1 < args.size(); ++i) {
            if (args[i] == "-id" && id.empty()) {
                id = "VM " + args[i + 1];
            } else if (args[i] == "-name" && name.empty()) {
                name = qemu_guest_name(args[i + 1]);
            }
        }
        for (auto* part : {&id, &name}) {
            if (!part->empty()) {
                about.push_back(*part);
            }
        }
    }
    return about.empty() ? out : out + " (" + util::join(about, ", ") + ")";
}

// The processes whose /proc/PID/fd links (readable as root) point at any of `nodes`.
std::vector<std::string> holders_of(const util::HostFs& fs, const std::vector<std::string>& nodes)
{
    std::vector<std::string> out;
    auto pids = fs.list_dir("/proc");
    if (!pids) {
        return out;
    }
    for (const auto& pid : *pids) {
        if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        const std::string dir = "/proc/" + pid + "/fd";
        auto fds = fs.list_dir(dir);
        if (!fds) {
            continue;
        }
        const bool holds = std::any_of(fds->begin(), fds->end(), [&](const std::string& fd) {
            auto target = fs.read_link(dir + "/" + fd);
            return target && std::find(nodes.begin(), nodes.end(), *target) != nodes.end();
        });
        if (holds) {
            out.push_back(describe_process(fs, pid));
        }
    }
    return out;
}

// What one verify asks VFIO about one group, and where it says its answers.
struct GroupProbe
{
    const scan::Inventory& inventory;
    const util::HostFs& fs;
    const VerifyTarget& target;
    int group;
    const Checks& c;

    std::string node() const { return "/dev/vfio/" + std::to_string(group); }
    std::string cannot() const { return "VFIO cannot take IOMMU group " + std::to_string(group) + ": "; }
    std::vector<scan::PciAddress> members() const
    {
        auto it = inventory.groups.find(group);
        return it == inventory.groups.end() ? std::vector<scan::PciAddress>{} : it->second.devices;
    }
};

// The nodes through which a process can hold group g: its group node, and the
// iommufd cdev of each member (/dev/vfio/devices/vfioN, named under the
// function's vfio-dev/ in sysfs).
std::vector<std::string> group_nodes(const GroupProbe& p)
{
    std::vector<std::string> nodes{p.node()};
    for (const auto& addr : p.members()) {
        if (auto cdevs = p.fs.list_dir("/sys/bus/pci/devices/" + addr.str() + "/vfio-dev")) {
            for (const auto& cdev : *cdevs) {
                nodes.push_back("/dev/vfio/devices/" + cdev);
            }
        }
    }
    return nodes;
}

// The group is taken by another user (EBUSY): a note naming who holds it, not a failure.
void note_in_use(const GroupProbe& p, const std::string& how)
{
    const auto holders = holders_of(p.fs, group_nodes(p));
    p.c.note(p.node() + " is in use by " + (holders.empty() ? "another process" : util::join(holders, ", ")) + " (" + how
             + "): this is what a running VM looks like, not a failure; VFIO was not asked further");
}

// "passthru plan --vm 101 --gpus 0000:01:00": the plan that binds the group.
std::string plan_command(const VerifyTarget& target)
{
    std::set<std::string> slots;
    for (const auto& addr : target.functions) {
        const std::string a = addr.str();
        slots.insert(a.substr(0, a.rfind('.')));
    }
    return "passthru plan --vm " + (target.vmid ? std::to_string(*target.vmid) : std::string("VMID")) + " --gpus "
           + util::join(std::vector<std::string>(slots.begin(), slots.end()), ",");
}

// VFIO_GROUP_GET_STATUS without VFIO_GROUP_FLAGS_VIABLE: each member on a
// driver other than vfio-pci, pci-stub or pcieport (which leave DMA to VFIO)
// is named with its id and driver. With none, another user owns the group's
// DMA (a process on a member's iommufd cdev: a note when one is seen).
void say_not_viable(const GroupProbe& p)
{
    std::vector<std::string> named;
    std::vector<std::string> addrs;
    for (const auto& addr : p.members()) {
        const auto* dev = p.inventory.find(addr);
        if (dev != nullptr && dev->driver && *dev->driver != k_vfio && *dev->driver != "pci-stub" && *dev->driver != "pcieport") {
            const std::string id = dev->vendor_device();
            named.push_back(addr.str() + (id.empty() ? "" : " [" + id + "]") + " on " + *dev->driver);
            addrs.push_back(addr.str());
        }
    }
    if (named.empty()) {
        if (!holders_of(p.fs, group_nodes(p)).empty()) {
            note_in_use(p, "not viable while its devices are open through the iommufd cdev");
            return;
        }
        p.c.add(false, p.cannot() + "the group is not viable, though no member is on a host driver",
                "another user holds the group's DMA ownership; check 'dmesg' for vfio messages and which process has "
                "/dev/vfio/devices/* open");
        return;
    }
    p.c.add(false, p.cannot() + "the group is not viable: " + util::join(named, ", "),
            "every device of IOMMU group " + std::to_string(p.group) + " must be on vfio-pci (or pci-stub, or no driver): bind "
                + util::join(addrs, ", ") + " to vfio-pci by adding it to passthru's plan with the card ('" + plan_command(p.target)
                + "' shows what passthru binds in this group and why it refuses a device), or move the card to a slot with its own "
                  "group");
}

// The container's IOMMU: type1v2, else type1, as QEMU picks it.
bool vfio_set_iommu(VfioGroupCalls& vfio, const GroupProbe& p)
{
    std::optional<VfioIommu> type;
    for (const auto t : {VfioIommu::type1v2, VfioIommu::type1}) {
        bool offered = false;
        if (const int err = vfio.has_iommu(t, offered); err != 0) {
            p.c.add(false, p.cannot() + "VFIO_CHECK_EXTENSION fails: " + errno_text(err),
                    "load vfio_iommu_type1 (modprobe vfio_iommu_type1)");
            return false;
        }
        if (offered) {
            type = t;
            break;
        }
    }
    if (!type) {
        p.c.add(false, p.cannot() + "the container offers no type1 IOMMU",
                "load vfio_iommu_type1 (modprobe vfio_iommu_type1) and check that the IOMMU is on");
        return false;
    }
    if (const int err = vfio.set_container(); err != 0) {
        if (err == EBUSY) {
            note_in_use(p, "VFIO_GROUP_SET_CONTAINER: " + errno_text(err));
        } else {
            p.c.add(false, p.cannot() + "VFIO_GROUP_SET_CONTAINER fails: " + errno_text(err),
                    "another process may be using the group; check dmesg for vfio messages");
        }
        return false;
    }
    if (const int err = vfio.set_iommu(*type); err != 0) {
        p.c.add(false, p.cannot() + "VFIO_SET_IOMMU fails: " + errno_text(err),
                "check dmesg for DMAR / AMD-Vi errors; interrupt remapping or the IOMMU driver may refuse the group");
        return false;
    }
    return true;
}

// The group and its container: open, viable, a type1 IOMMU. False (with the
// check line said) when VFIO stops before the devices.
bool vfio_attach(VfioGroupCalls& vfio, const GroupProbe& p)
{
    if (const int err = vfio.open_group(); err != 0) {
        if (err == EBUSY) {
            note_in_use(p, "open: " + errno_text(err));
        } else if (err != ENOENT) {
            p.c.add(false, p.cannot() + "opening " + p.node() + " fails: " + errno_text(err),
                    "run verify as root; the node belongs to VFIO (vfio-pci and vfio modules loaded)");
        }
        return false;
    }
    bool viable = false;
    if (const int err = vfio.group_viable(viable); err != 0) {
        p.c.add(false, p.cannot() + "VFIO_GROUP_GET_STATUS fails: " + errno_text(err), "reload vfio-pci, or reboot");
        return false;
    }
    if (!viable) {
        say_not_viable(p);
        return false;
    }
    int version = -1;
    if (const int err = vfio.open_container(version); err != 0 || version != vfio_api_version()) {
        p.c.add(false,
                p.cannot()
                    + (err != 0 ? "opening /dev/vfio/vfio fails: " + errno_text(err)
                                : "/dev/vfio/vfio speaks VFIO API version " + std::to_string(version)),
                "load the vfio module (modprobe vfio); check that /dev/vfio/vfio is VFIO's container node");
        return false;
    }
    return vfio_set_iommu(vfio, p);
}

// Every planned function of the group through VFIO: its device descriptor,
// its regions and interrupts. One line per group when all is well.
void check_vfio(VfioGroupCalls& vfio, const GroupProbe& p, const std::vector<scan::PciAddress>& functions)
{
    if (!vfio_attach(vfio, p)) {
        return;
    }
    const std::string g = std::to_string(p.group);
    std::vector<std::string> taken;
    bool failed = false;
    for (const auto& addr : functions) {
        VfioDeviceInfo info;
        if (const int err = vfio.device(addr.str(), info); err != 0) {
            failed = true;
            p.c.add(false, "VFIO cannot open " + addr.str() + " in IOMMU group " + g + ": " + errno_text(err),
                    err == ENODEV
                        ? "the function is not a VFIO device of this group: bind it to vfio-pci, and check that it is still in group " + g
                        : "check dmesg for vfio-pci messages about " + addr.str());
            continue;
        }
        if (info.region_err != 0) {
            failed = true;
            p.c.add(false,
                    "VFIO refuses region " + std::to_string(info.refused_region) + " of " + addr.str() + ": " + errno_text(info.region_err),
                    "check dmesg for vfio-pci messages about " + addr.str()
                        + "; a BAR the firmware left unassigned needs the "
                          "firmware's Above 4G decoding (or Resizable BAR off)");
            continue;
        }
        taken.push_back(addr.str() + " (" + std::to_string(info.regions) + " regions, " + std::to_string(info.irqs) + " interrupt types)");
    }
    if (!failed) {
        p.c.add(true, "VFIO takes IOMMU group " + g + " (viable, type1 container): " + util::join(taken, ", "));
    }
}

// What VFIO says of each group, on the live host only.
void check_vfio_groups(const scan::Inventory& inventory, const util::HostFs& fs, const VerifyTarget& target, const std::set<int>& groups,
                       const VfioOpener& opener, const Checks& c)
{
    for (int g : groups) {
        const GroupProbe p{inventory, fs, target, g, c};
        if (!opener) {
            c.note("VFIO's answer for IOMMU group " + std::to_string(g) + ": not checked (--root)");
            continue;
        }
        if (!fs.exists(p.node())) {
            auto cdevs = fs.list_dir("/dev/vfio/devices");
            if (cdevs && !cdevs->empty()) {
                c.note("VFIO's answer for IOMMU group " + std::to_string(g) + ": not checked: only the iommufd cdev (/dev/vfio/devices/"
                       + cdevs->front() + "...) exists on this kernel, no " + p.node());
            }
            continue;
        }
        std::vector<scan::PciAddress> functions;
        for (const auto& addr : target.functions) {
            const auto* dev = inventory.find(addr);
            if (dev != nullptr && dev->iommu_group == g) {
                functions.push_back(addr);
            }
        }
        auto vfio = opener(g);
        check_vfio(*vfio, p, functions);
    }
}

// The VM config carries the cards (Proxmox VE hosts only).
void check_vm_config(const util::HostFs& fs, const VerifyTarget& target, const Checks& c)
{
    if (!target.vmid || !fs.is_dir("/etc/pve")) {
        return;
    }
    const std::string vm = std::to_string(*target.vmid);
    auto text = fs.read_file(config_path(*target.vmid));
    if (!text) {
        c.add(false, "VM " + vm + " has no config " + config_path(*target.vmid), "create the VM, or apply the plan again with --vm " + vm);
        return;
    }
    const std::vector<std::string> ids = passed_ids(fs, *text);
    std::vector<std::string> absent;
    for (const auto& addr : target.functions) {
        if (!covered_by(ids, addr)) {
            absent.push_back(addr.str());
        }
    }
    if (absent.empty()) {
        c.add(true, "VM " + vm + " passes every selected function (hostpci)");
    } else {
        c.add(false, "VM " + vm + "'s config does not pass " + util::join(absent, ", "),
              "add hostpci entries (passthru apply --vm " + vm + " --gpus ...) or qm set " + vm + " --hostpci0 <slot>,pcie=1");
    }
}

} // namespace

VerifyTarget target_of_generation(const Manifest& m)
{
    VerifyTarget target;
    target.source = "generation " + std::to_string(m.id);
    target.kernel_args = m.kernel_args;
    std::set<scan::PciAddress> seen;
    for (const auto& g : m.gpus) {
        for (const auto& f : g.functions) {
            if (auto a = scan::PciAddress::parse(f); a && seen.insert(*a).second) {
                target.functions.push_back(*a);
            }
        }
    }
    if (m.request) {
        target.vmid = m.request->vmid;
    }
    return target;
}

VerifyReport verify_host(const scan::Inventory& inventory, const util::HostFs& fs, const VerifyTarget& target)
{
    VfioOpener opener;
    if (fs.is_live()) {
        opener = [&fs](int group) { return kernel_vfio(fs, group); };
    }
    return verify_host(inventory, fs, target, opener);
}

VerifyReport verify_host(const scan::Inventory& inventory, const util::HostFs& fs, const VerifyTarget& target, const VfioOpener& vfio)
{
    VerifyReport rep;
    const Checks c{rep};
    rep.iommu_on = inventory.host.iommu.enabled;
    if (!rep.iommu_on) {
        c.add(
            false, "the IOMMU is off: /sys/kernel/iommu_groups is empty",
            inventory.host.is_intel()
                ? "enable VT-d in the firmware setup and add intel_iommu=on to the kernel command line, then reboot"
                : "enable the IOMMU (AMD-Vi / SVM + IOMMU) in the firmware setup, then reboot; check 'dmesg | grep -i -e DMAR -e AMD-Vi'");
        return rep;
    }
    c.add(true, "the IOMMU is on (" + std::to_string(inventory.host.iommu.groups) + " groups)");
    check_kernel_args(inventory, fs, target, c);
    if (target.functions.empty()) {
        c.add(false, "no PCI function to check (" + target.source + ")",
              target.vmid ? "VM " + std::to_string(*target.vmid)
                                + "'s config passes no PCI device yet: apply a plan for it first "
                                  "(passthru plan --vm "
                                + std::to_string(*target.vmid) + " --gpus SEL), or give --gpus"
                          : std::string("give --vm VMID or --gpus, or apply a plan first"));
        return rep;
    }
    const std::set<scan::PciAddress> selected(target.functions.begin(), target.functions.end());
    const std::set<int> groups = check_bindings(inventory, target, c);
    for (auto& check : check_card_states(inventory, fs, target)) {
        rep.checks.push_back(std::move(check));
    }
    for (int g : groups) {
        check_group(inventory, fs, selected, g, c);
    }
    check_vfio_groups(inventory, fs, target, groups, vfio, c);
    check_vm_config(fs, target, c);
    return rep;
}

} // namespace passthru::apply
