// SPDX-License-Identifier: GPL-2.0-or-later
// NVIDIA vGPU host detection (docs/facts.md: vgpu).
#include "scan/vgpu.hpp"

#include <array>
#include <string_view>

#include "util/strings.hpp"

namespace passthru::scan {

namespace {

// The systemd units NVIDIA's vGPU manager for Linux KVM installs: the daemon
// that serves the vGPUs and the one that sets up their types.
constexpr std::array<std::string_view, 2> k_manager_units = {"nvidia-vgpu-mgr.service", "nvidia-vgpud.service"};
// Where systemd finds unit files: the admin's, then the packages' (merged /usr and not).
constexpr std::array<std::string_view, 3> k_unit_dirs = {"/etc/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"};
// Proxmox VE's template unit (pve-nvidia-vgpu-helper) that enables the VFs of NVIDIA GPUs at boot.
constexpr std::string_view k_pve_sriov_unit = "pve-nvidia-sriov@";

void manager_units(const util::HostFs& fs, std::vector<std::string>& evidence)
{
    for (const auto unit : k_manager_units) {
        for (const auto dir : k_unit_dirs) {
            const std::string path = std::string(dir) + "/" + std::string(unit);
            if (fs.exists(path)) {
                evidence.push_back("the NVIDIA vGPU manager's unit " + path);
                break;
            }
        }
    }
}

// pve-nvidia-sriov@<address or ALL>.service enabled in some target's .wants.
void enabled_sriov_units(const util::HostFs& fs, std::vector<std::string>& evidence)
{
    const std::string etc = "/etc/systemd/system";
    auto dirs = fs.list_dir(etc);
    if (!dirs) {
        return;
    }
    for (const auto& wants : *dirs) {
        if (!wants.ends_with(".wants")) {
            continue;
        }
        auto units = fs.list_dir(etc + "/" + wants);
        if (!units) {
            continue;
        }
        for (const auto& unit : *units) {
            if (unit.starts_with(k_pve_sriov_unit)) {
                evidence.push_back("Proxmox VE's " + unit + " is enabled (" + etc + "/" + wants + ")");
            }
        }
    }
}

// A GPU (a physical display function) of a vendor with a vGPU stack.
bool vgpu_capable(const GpuVendors& vendors, const PciDevice& d)
{
    const auto row = vendors.find(d.vendor);
    return row != nullptr && row->vgpu && d.is_display() && !d.is_virtfn;
}

void nvidia_vfs(const std::vector<PciDevice>& devices, const GpuVendors& vendors, std::vector<std::string>& evidence)
{
    for (const auto& d : devices) {
        if (vgpu_capable(vendors, d) && d.sriov_numvfs.value_or(0) > 0) {
            evidence.push_back(d.address.str() + " has " + std::to_string(*d.sriov_numvfs) + " SR-IOV virtual functions enabled");
        }
    }
}

} // namespace

std::vector<std::string> detect_vgpu_host(const util::HostFs& fs, const std::vector<PciDevice>& devices, const GpuVendors& vendors)
{
    std::vector<std::string> evidence;
    manager_units(fs, evidence);
    enabled_sriov_units(fs, evidence);
    nvidia_vfs(devices, vendors, evidence);
    if (evidence.empty()) {
        return evidence;
    }
    // The driver bound to NVIDIA GPUs supports the finding; alone it only
    // means the host uses its GPUs itself.
    std::vector<std::string> held;
    for (const auto& d : devices) {
        if (vgpu_capable(vendors, d) && d.driver == "nvidia") {
            held.push_back(d.address.str());
        }
    }
    if (!held.empty()) {
        evidence.push_back("the nvidia driver holds " + util::join(held, ", "));
    }
    return evidence;
}

} // namespace passthru::scan
