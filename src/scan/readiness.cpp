// SPDX-License-Identifier: GPL-2.0-or-later
// What is wrong with the host for passthrough, and the exact fix for each.
#include <algorithm>

#include "format/kernel_cmdline.hpp"
#include "scan/card_state.hpp"
#include "scan/rom_need.hpp"
#include "scan/scanner.hpp"
#include "util/strings.hpp"

namespace passthru::scan {

namespace {

// "<what> on the kernel command line", placed where this boot loader reads it.
std::string cmdline_howto(const HostInfo& host, const std::string& what)
{
    return scan::cmdline_howto(boot_loader(host.bootloader), what);
}

std::string names_of(const Inventory& inv, const std::vector<PciAddress>& addrs)
{
    std::vector<std::string> parts;
    for (const auto& a : addrs) {
        const PciDevice* d = inv.find(a);
        std::string text = a.str();
        if (d != nullptr && !d->class_name.empty()) {
            text += " (" + d->class_name + (d->device_name.empty() ? "" : ": " + d->device_name) + ")";
        }
        parts.push_back(text);
    }
    return util::join(parts, ", ");
}

} // namespace

IntelIommuDefault intel_iommu_default(const Inventory& inv)
{
    // docs/facts.md: iommu. The kernel's own config wins over its release: Debian's kernels
    // leave VT-d off at every release, Proxmox's turn it on from the release in the data.
    const std::string kernel = inv.host.kernel.value_or("?");
    if (const auto config = inv.host.intel_iommu_default_on_config) {
        return {*config, "kernel " + kernel + "'s config (/boot/config-" + kernel + ") "
                             + (*config ? "has CONFIG_INTEL_IOMMU_DEFAULT_ON=y" : "has CONFIG_INTEL_IOMMU_DEFAULT_ON unset")};
    }
    const auto version = inv.host.kernel ? util::major_minor(*inv.host.kernel) : std::nullopt;
    const std::string cut = data::KernelCutoffs::text(inv.kernel_cutoffs.intel_iommu_default_on);
    if (data::KernelCutoffs::at_least(version, inv.kernel_cutoffs.intel_iommu_default_on)) {
        return {true, "kernel " + kernel + " enables the Intel IOMMU by default"};
    }
    return {false, "kernels before " + cut + " leave the Intel IOMMU off by default"};
}

namespace {

void check_iommu(const Inventory& inv, const format::KernelCmdline& cmdline, std::vector<Problem>& problems)
{
    const HostInfo& host = inv.host;
    if (!host.iommu.enabled) {
        std::string fix;
        if (cmdline.value("iommu") == "off" || cmdline.value("intel_iommu") == "off" || cmdline.value("amd_iommu") == "off") {
            fix = "the kernel command line turns the IOMMU off: remove iommu=off/intel_iommu=off/amd_iommu=off. ";
        }
        if (host.is_amd()) {
            fix += "Enable the IOMMU (AMD-Vi, often 'IOMMU' or 'SVM' under NBIO/AMD CBS) in the firmware setup and reboot; "
                   "AMD-Vi is on by default in the kernel, and there is no amd_iommu=on option";
        } else if (host.is_intel()) {
            const IntelIommuDefault by_default = intel_iommu_default(inv);
            if (by_default.on) {
                fix += "Enable VT-d in the firmware setup and reboot (" + by_default.why + ")";
            } else {
                fix += "Enable VT-d in the firmware setup, and " + cmdline_howto(host, "set intel_iommu=on") + " (" + by_default.why + ")";
            }
        } else {
            fix += "Enable the IOMMU in the firmware setup and on the kernel command line for this platform";
        }
        problems.push_back({Severity::error, "no IOMMU groups: the IOMMU is off, so no device can be passed through", fix});
    } else if (host.iommu.interrupt_remapping == false) {
        problems.push_back(
            {Severity::warning, "interrupt remapping is not available (" + host.iommu.interrupt_remapping_evidence + ")",
             "enable interrupt remapping/x2APIC in the firmware; otherwise vfio needs "
             "'options vfio_iommu_type1 allow_unsafe_interrupts=1', which weakens isolation (passthru plan adds it with a warning)"});
    }
}

void check_cmdline_mistakes(const HostInfo& host, const format::KernelCmdline& cmdline, std::vector<Problem>& problems)
{
    if (cmdline.has_token("amd_iommu=on")) {
        problems.push_back({Severity::warning,
                            "the kernel command line has amd_iommu=on, which is not a kernel option (the kernel logs \"Unknown option\")",
                            cmdline_howto(host, "remove amd_iommu=on") + "; passthru plan removes it"});
    }
    if (auto ids = cmdline.value("vfio-pci.ids"); ids && ids->find(' ') != std::string::npos) {
        problems.push_back(
            {Severity::warning, "vfio-pci.ids on the kernel command line contains a space", "list ids comma-separated without spaces"});
    }
}

// The card's IOMMU group, boot VGA and PCIe link.
void check_gpu_slot(const Inventory& inv, const GpuCard& gpu, const std::string& label, std::vector<Problem>& problems)
{
    if (gpu.isolation == Isolation::shared) {
        problems.push_back({gpu.host_critical.empty() ? Severity::warning : Severity::error,
                            label + " shares IOMMU group "
                                + util::join(
                                    [&] {
                                        std::vector<std::string> g;
                                        g.reserve(gpu.iommu_groups.size());
                                        for (int n : gpu.iommu_groups) {
                                            g.push_back(std::to_string(n));
                                        }
                                        return g;
                                    }(),
                                    ",")
                                + " with other devices: " + names_of(inv, gpu.other_endpoints)
                                + (gpu.host_critical.empty() ? "" : "; host-critical: " + names_of(inv, gpu.host_critical)),
                            "move the card to a slot wired to the CPU (its own group), or accept weaker isolation with "
                            "'passthru plan --acs-override' (pcie_acs_override=downstream,multifunction)"});
    } else if (gpu.isolation == Isolation::shared_with_gpu) {
        problems.push_back({Severity::info, label + " shares its IOMMU group with another GPU: " + names_of(inv, gpu.shares_with),
                            "pass both cards to the same VM, or move one to another slot"});
    }
    if (const auto state = card_state(inv, gpu); state.did_not_come_back()) {
        problems.push_back({Severity::error, label + " did not come back: " + util::join(state.stuck, "; "), state.fix});
    }
    if (auto need = rom_file_need(inv, gpu)) {
        problems.push_back({Severity::info, label + ": likely to need a ROM file (romfile=)", *need});
    }
    if (gpu.boot_vga) {
        problems.push_back(
            {Severity::warning, label + " is the boot VGA (the host console and firmware framebuffer use it)",
             "pass another card, or accept losing the local console: passthru plan then keeps the boot framebuffer off the card"});
    }
    for (const auto& fn : gpu.functions) {
        const PciDevice* dev = inv.find(fn);
        if (dev == nullptr || !dev->is_display() || !dev->link) {
            continue;
        }
        const auto& link = *dev->link;
        if (link.width && link.max_width && *link.width < *link.max_width) {
            problems.push_back(
                {*link.width == 1 ? Severity::warning : Severity::info,
                 label + " runs at PCIe x" + std::to_string(*link.width) + " of x" + std::to_string(*link.max_width),
                 "check for a riser, a chipset-wired slot or a slot shared with M.2; use a full-width CPU slot for training workloads"});
        }
        if (link.speed_gts && link.max_speed_gts && *link.speed_gts < *link.max_speed_gts) {
            problems.push_back({Severity::info, label + " link runs at " + link.speed.value_or("?") + " of " + link.max_speed.value_or("?"),
                                "idle GPUs lower their link speed to save power; if it stays low under load, check risers and the slot's "
                                "generation setting in the firmware"});
        }
    }
}

// Name every function on a host driver: a card half on vfio-pci is the
// "group is not viable" failure of hand-written ids= lists. Only the cards of a
// vendor passthru handles (a row in profiles/host/vendors.json).
void check_gpu_drivers(const Inventory& inv, const GpuCard& gpu, const std::string& label, std::vector<Problem>& problems)
{
    if (gpu.vendor_row == nullptr) {
        return;
    }
    std::vector<std::string> on_host;
    bool any_vfio = false;
    for (const auto& fn : gpu.functions) {
        const PciDevice* dev = inv.find(fn);
        if (dev == nullptr || !dev->driver) {
            continue;
        }
        if (*dev->driver == "vfio-pci") {
            any_vfio = true;
        } else {
            on_host.push_back(fn.str() + " on " + *dev->driver);
        }
    }
    if (!on_host.empty() && any_vfio) {
        problems.push_back(
            {Severity::warning,
             label + " is only partly on vfio-pci: " + util::join(on_host, ", ") + " (the VM start fails with \"group is not viable\")",
             "passthru plan binds every function of the card, not just VGA and audio"});
    } else if (!on_host.empty()) {
        problems.push_back({Severity::info, label + " is on host drivers: " + util::join(on_host, ", "),
                            "passthru plan binds every function of the card to vfio-pci at boot"});
    }
}

} // namespace

void assess_readiness(Inventory& inv)
{
    auto& problems = inv.problems;
    const HostInfo& host = inv.host;
    const format::KernelCmdline cmdline(host.cmdline.value_or(""));

    if (host.virtualization == false) {
        problems.push_back({Severity::error,
                            "the CPU does not show hardware virtualization (no " + std::string(host.is_amd() ? "svm" : "vmx") + " flag)",
                            host.is_amd() ? "enable SVM Mode in the firmware setup" : "enable Intel VT-x in the firmware setup"});
    }
    check_iommu(inv, cmdline, problems);
    check_cmdline_mistakes(host, cmdline, problems);
    if (host.bootloader == Bootloader::unknown) {
        problems.push_back({Severity::warning, "cannot tell which boot loader this host uses (" + host.bootloader_evidence + ")",
                            "run 'proxmox-boot-tool status' and 'efibootmgr -v' on the host; passthru will not edit a kernel command line "
                            "it cannot place"});
    }

    if (!host.pve_version) {
        problems.push_back({Severity::info, "Proxmox VE (pve-manager) is not installed on this host",
                            "VM configuration needs Proxmox VE, or use --backend libvirt on a plain KVM host"});
    }

    for (const auto& gpu : inv.gpus) {
        const std::string label = "GPU " + gpu.slot;
        check_gpu_slot(inv, gpu, label, problems);
        check_gpu_drivers(inv, gpu, label, problems);
    }

    if (inv.gpus.empty()) {
        problems.push_back({Severity::info, "no GPU (display-class PCI function) found", "nothing to pass through"});
    }
    const bool vfio_loaded = host.module_loaded("vfio_pci") || host.module_loaded("vfio-pci");
    if (!vfio_loaded && !host.loaded_modules.empty()) {
        problems.push_back({Severity::info, "the vfio-pci module is not loaded",
                            "passthru plan writes /etc/modules-load.d/vfio.conf and the initramfs module list"});
    }
}

} // namespace passthru::scan
