// SPDX-License-Identifier: GPL-2.0-or-later
#include "apply/verify.hpp"

#include <algorithm>
#include <set>

#include "format/pve_config.hpp"
#include "format/pve_mapping.hpp"
#include "plan/after_step.hpp"
#include "scan/boot_loader.hpp"
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
        if (dev == nullptr || dev->is_bridge_like() || !dev->driver || *dev->driver == k_vfio || *dev->driver == "pci-stub"
            || *dev->driver == "pcieport") {
            continue;
        }
        c.add(false, "IOMMU group " + std::to_string(g) + " also holds " + addr.str() + " on the host driver " + *dev->driver,
              "the group is not viable for VFIO while a host driver owns one of its devices; pass " + addr.str()
                  + " too, or move the card to a slot with its own group");
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
        for (const auto& f : g.value("functions", std::vector<std::string>{})) {
            if (auto a = scan::PciAddress::parse(f); a && seen.insert(*a).second) {
                target.functions.push_back(*a);
            }
        }
    }
    if (m.request.is_object() && m.request.contains("vmid") && m.request["vmid"].is_number_unsigned()) {
        target.vmid = m.request["vmid"].get<std::uint64_t>();
    }
    return target;
}

VerifyReport verify_host(const scan::Inventory& inventory, const util::HostFs& fs, const VerifyTarget& target)
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
        c.add(false, "no PCI function to check (" + target.source + ")", "give --vm VMID or --gpus, or apply a plan first");
        return rep;
    }
    const std::set<scan::PciAddress> selected(target.functions.begin(), target.functions.end());
    for (int g : check_bindings(inventory, target, c)) {
        check_group(inventory, fs, selected, g, c);
    }
    check_vm_config(fs, target, c);
    return rep;
}

} // namespace passthru::apply
