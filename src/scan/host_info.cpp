// SPDX-License-Identifier: GPL-2.0-or-later
// Host facts: CPU, kernel, command line, boot loader, IOMMU, Proxmox VE.
#include <algorithm>

#include "scan/boot_loader.hpp"
#include "scan/scanner.hpp"
#include "util/strings.hpp"

namespace passthru::scan {

namespace {

void read_cpuinfo(const util::HostFs& fs, HostInfo& host)
{
    auto text = fs.read_file("/proc/cpuinfo");
    if (!text) {
        return;
    }
    bool first = true;
    for (const auto& line : util::split_lines(*text)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) {
            continue;
        }
        const std::string key(util::trim(std::string_view(line).substr(0, colon)));
        const std::string value(util::trim(std::string_view(line).substr(colon + 1)));
        if (key == "processor") {
            ++host.cpu_count;
            first = host.cpu_count == 1;
        }
        if (!first) {
            continue;
        }
        if (key == "vendor_id") {
            host.cpu_vendor = value == "AuthenticAMD" ? "AMD" : value == "GenuineIntel" ? "Intel" : value;
        } else if (key == "model name") {
            host.cpu_model = value;
        } else if (key == "flags") {
            const auto flags = util::split(value, " ");
            host.virtualization =
                std::find(flags.begin(), flags.end(), "vmx") != flags.end() || std::find(flags.begin(), flags.end(), "svm") != flags.end();
            host.pdpe1gb = std::find(flags.begin(), flags.end(), "pdpe1gb") != flags.end();
        } else if (key == "address sizes") {
            // "46 bits physical, 48 bits virtual"
            if (const auto bits = util::parse_int(value.substr(0, value.find(' '))); bits && *bits > 0 && *bits <= 64) {
                host.phys_address_bits = static_cast<int>(*bits);
            }
        }
    }
}

void read_modules(const util::HostFs& fs, HostInfo& host)
{
    auto text = fs.read_file("/proc/modules");
    if (!text) {
        return;
    }
    for (const auto& line : util::split_lines(*text)) {
        const auto parts = util::split(line, " ");
        if (!parts.empty()) {
            host.loaded_modules.push_back(parts[0]);
        }
    }
    std::sort(host.loaded_modules.begin(), host.loaded_modules.end());
}

void read_meminfo(const util::HostFs& fs, HostInfo& host)
{
    auto text = fs.read_file("/proc/meminfo");
    if (!text) {
        return;
    }
    for (const auto& line : util::split_lines(*text)) {
        if (line.rfind("MemTotal:", 0) == 0) {
            const auto parts = util::split(line.substr(9), " ");
            if (!parts.empty()) {
                if (auto kib = util::parse_int(parts[0]); kib && *kib > 0) {
                    host.mem_total_kib = static_cast<std::uint64_t>(*kib);
                }
            }
        }
    }
}

// Interrupt remapping: the kernel tags remapped interrupt domains "IR-" in
// The huge page sizes hugetlbfs offers: one hugepages-<N>kB directory each.
void read_hugepage_sizes(const util::HostFs& fs, HostInfo& host)
{
    auto names = fs.list_dir("/sys/kernel/mm/hugepages");
    if (!names) {
        return;
    }
    std::vector<std::uint64_t> sizes;
    constexpr std::string_view prefix = "hugepages-";
    constexpr std::string_view suffix = "kB";
    for (const auto& name : *names) {
        if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0
            || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
            continue;
        }
        const auto kib = util::parse_int(std::string_view(name).substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
        if (kib && *kib > 0) {
            sizes.push_back(static_cast<std::uint64_t>(*kib));
        }
    }
    std::sort(sizes.begin(), sizes.end());
    host.hugepage_sizes_kib = std::move(sizes);
}

// /proc/interrupts (IR-PCI-MSI, IR-IO-APIC). Without that file, Intel's
// DMAR units report IR support in bit 3 of their extended capabilities.
void read_interrupt_remapping(const util::HostFs& fs, HostInfo& host)
{
    if (auto text = fs.read_file("/proc/interrupts")) {
        if (text->find("IR-") != std::string::npos) {
            host.iommu.interrupt_remapping = true;
            host.iommu.interrupt_remapping_evidence = "/proc/interrupts has IR- interrupt domains";
            return;
        }
        if (text->find("PCI-MSI") != std::string::npos || text->find("IO-APIC") != std::string::npos) {
            host.iommu.interrupt_remapping = false;
            host.iommu.interrupt_remapping_evidence = "/proc/interrupts has no IR- interrupt domains";
            return;
        }
    }
    for (const auto& unit : host.iommu.units) {
        if (auto ecap = fs.read_attr("/sys/class/iommu/" + unit + "/intel-iommu/ecap")) {
            if (auto bits = util::parse_hex(*ecap)) {
                host.iommu.interrupt_remapping = ((*bits >> 3) & 1U) != 0;
                host.iommu.interrupt_remapping_evidence = "/sys/class/iommu/" + unit + "/intel-iommu/ecap bit 3";
                return;
            }
        }
    }
}

std::optional<std::string> dpkg_version(const util::HostFs& fs, std::string_view package)
{
    auto text = fs.read_file("/var/lib/dpkg/status");
    if (!text) {
        return std::nullopt;
    }
    bool in_package = false;
    bool installed = false;
    std::optional<std::string> version;
    for (const auto& line : util::split_lines(*text)) {
        if (line.empty()) {
            if (in_package && installed && version) {
                return version;
            }
            in_package = false;
            installed = false;
            version.reset();
            continue;
        }
        if (line.rfind("Package: ", 0) == 0) {
            in_package = util::trim(line.substr(9)) == package;
        } else if (in_package && line.rfind("Status: ", 0) == 0) {
            installed = line.find(" installed") != std::string::npos;
        } else if (in_package && line.rfind("Version: ", 0) == 0) {
            version = std::string(util::trim(line.substr(9)));
        }
    }
    if (in_package && installed && version) {
        return version;
    }
    return std::nullopt;
}

// Which boot loader (docs/facts.md: boot-loader): proxmox-boot-tool status on a live host; files
// otherwise. The table in boot_loader.cpp turns the evidence into a boot loader.
BootProbe probe_proxmox_boot_tool(const util::CommandRunner& runner)
{
    auto status = runner.query({std::string(k_proxmox_boot_tool), "status"});
    if (!status) {
        return BootProbe::not_installed;
    }
    if (status->exit_code == 2) {
        return BootProbe::no_esp;
    }
    if (status->exit_code == 0) {
        // Per ESP: "<uuid> is configured with: uefi (versions: ...)" or "grub (versions: ...)";
        // PVE 9's pve8to9 also accepts "systemd-boot" there.
        const bool sd = status->output.find("configured with: uefi") != std::string::npos
                        || status->output.find("configured with: systemd-boot") != std::string::npos;
        return sd ? BootProbe::esp_uefi : BootProbe::esp_grub;
    }
    return BootProbe::not_run; // any other exit: decide from the files
}

void detect_bootloader(const util::HostFs& fs, const util::CommandRunner& runner, HostInfo& host)
{
    BootEvidence e;
    e.uefi = host.uefi = fs.is_dir("/sys/firmware/efi");
    if (auto uuids = fs.read_file("/etc/kernel/proxmox-boot-uuids")) {
        const auto lines = util::split_lines(*uuids);
        e.esps = std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return !util::trim(l).empty(); });
    }
    // A dangling symlink there is systemd-boot's file all the same (and its
    // reading then fails, closed), never a sign that GRUB boots the host.
    e.kernel_cmdline = fs.exists("/etc/kernel/cmdline") || fs.read_link("/etc/kernel/cmdline").has_value();
    e.grub_config = fs.exists("/etc/default/grub") || fs.is_dir("/boot/grub");
    if (fs.is_live()) {
        e.probe = probe_proxmox_boot_tool(runner);
    }
    host.proxmox_boot_tool = e.esps || e.probe == BootProbe::esp_uefi || e.probe == BootProbe::esp_grub;
    auto [spec, why] = detect_boot_loader(e);
    host.bootloader = spec->id;
    host.bootloader_evidence = std::move(why);
}

// The one line of the running kernel's config that decides whether VT-d is on without
// intel_iommu=on (docs/facts.md: iommu). A kernel name with a '/' names no file of /boot.
void read_kernel_config(const util::HostFs& fs, HostInfo& host)
{
    if (!host.kernel || host.kernel->empty() || host.kernel->find('/') != std::string::npos) {
        return;
    }
    auto text = fs.read_file("/boot/config-" + *host.kernel);
    if (!text) {
        return;
    }
    for (const auto& line : util::split_lines(*text)) {
        if (line == "CONFIG_INTEL_IOMMU_DEFAULT_ON=y") {
            host.intel_iommu_default_on_config = true;
        } else if (line == "# CONFIG_INTEL_IOMMU_DEFAULT_ON is not set" || line.starts_with("CONFIG_INTEL_IOMMU_DEFAULT_ON=")) {
            host.intel_iommu_default_on_config = false;
        }
    }
}

} // namespace

HostInfo scan_host_info(const util::HostFs& fs, const util::CommandRunner& runner)
{
    HostInfo host;
    read_cpuinfo(fs, host);
    host.kernel = fs.read_attr("/proc/sys/kernel/osrelease");
    host.bootable_kernels = bootable_kernels(fs);
    read_kernel_config(fs, host);
    host.cmdline = fs.read_attr("/proc/cmdline");
    read_modules(fs, host);
    read_meminfo(fs, host);
    read_hugepage_sizes(fs, host);
    if (auto units = fs.list_dir("/sys/class/iommu")) {
        host.iommu.units = std::move(*units);
    }
    read_interrupt_remapping(fs, host);
    detect_bootloader(fs, runner, host);
    host.pve_version = dpkg_version(fs, "pve-manager");
    host.qemu_server_version = dpkg_version(fs, "qemu-server");
    return host;
}

} // namespace passthru::scan
