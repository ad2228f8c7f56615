// SPDX-License-Identifier: GPL-2.0-or-later
// plan_host: the host side of passthrough (kernel command line, module
// lists, modprobe.d, initramfs) and the commands that make it take effect.
#include <libkmod.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <set>

#include "plan/host/host_detail.hpp"
#include "plan/host/modprobe_config.hpp"
#include "scan/boot_loader.hpp"
#include "scan/kmod_ctx.hpp"
#include "util/strings.hpp"

namespace passthru::plan {

namespace detail {

namespace {

// <root>/lib/modules/<kver> as a local path, when it holds a depmod index.
std::optional<std::filesystem::path> module_tree(const util::HostFs& fs, std::string_view kernel_release)
{
    if (kernel_release.empty() || kernel_release.find('/') != std::string_view::npos) {
        return std::nullopt;
    }
    const std::string dir = "/lib/modules/" + std::string(kernel_release);
    if (!fs.is_dir(dir) || (!fs.exists(dir + "/modules.dep.bin") && !fs.exists(dir + "/modules.dep"))) {
        return std::nullopt;
    }
    auto local = fs.local(dir);
    if (!local) {
        return std::nullopt;
    }
    return *local;
}

} // namespace

std::optional<bool> target_has_module(const util::HostFs& fs, std::string_view kernel_release, std::string_view name)
{
    const auto dir = module_tree(fs, kernel_release);
    if (!dir) {
        return std::nullopt;
    }
    // No configuration files: only the module tree of the target counts,
    // never this machine's /etc/modprobe.d aliases.
    const char* no_config[] = {nullptr};
    kmod_ctx* ctx = scan::new_quiet_kmod_ctx(dir->c_str(), no_config);
    if (ctx == nullptr) {
        return std::nullopt;
    }
    kmod_list* list = nullptr;
    const std::string wanted(name);
    const int rc = kmod_module_new_from_lookup(ctx, wanted.c_str(), &list);
    std::optional<bool> found;
    if (rc >= 0) {
        found = false;
        kmod_list* it = nullptr;
        kmod_list_foreach(it, list)
        {
            kmod_module* mod = kmod_module_get_module(it);
            if (module_key(kmod_module_get_name(mod)) == module_key(wanted)) {
                found = true;
            }
            kmod_module_unref(mod);
        }
        kmod_module_unref_list(list);
    }
    kmod_unref(ctx);
    return found;
}

namespace {

// The kernel's modalias of a PCI function (drivers/pci/pci-sysfs.c, modalias_show):
// pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X; empty when an id is unknown.
std::string pci_modalias(const scan::PciDevice& dev)
{
    if (!dev.vendor || !dev.device || !dev.subsystem_vendor || !dev.subsystem_device || !dev.class_code) {
        return {};
    }
    std::array<char, 64> buf{};
    const std::uint32_t cls = *dev.class_code;
    std::snprintf(buf.data(), buf.size(), "pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X", unsigned{*dev.vendor}, unsigned{*dev.device},
                  unsigned{*dev.subsystem_vendor}, unsigned{*dev.subsystem_device}, (cls >> 16U) & 0xffU, (cls >> 8U) & 0xffU, cls & 0xffU);
    return buf.data();
}

} // namespace

std::vector<std::string> target_alias_modules(const util::HostFs& fs, std::string_view kernel_release, const scan::PciDevice& dev)
{
    std::vector<std::string> out;
    const std::string alias = pci_modalias(dev);
    const auto dir = module_tree(fs, kernel_release);
    if (alias.empty() || !dir) {
        return out;
    }
    // no configuration files: the module tree's own aliases, not modprobe.d's
    const char* no_config[] = {nullptr};
    kmod_ctx* ctx = scan::new_quiet_kmod_ctx(dir->c_str(), no_config);
    if (ctx == nullptr) {
        return out;
    }
    kmod_list* list = nullptr;
    if (kmod_module_new_from_lookup(ctx, alias.c_str(), &list) >= 0) {
        kmod_list* it = nullptr;
        kmod_list_foreach(it, list)
        {
            kmod_module* mod = kmod_module_get_module(it);
            std::string name = kmod_module_get_name(mod);
            if (std::find(out.begin(), out.end(), name) == out.end()) {
                out.push_back(std::move(name));
            }
            kmod_module_unref(mod);
        }
        kmod_module_unref_list(list);
    }
    kmod_unref(ctx);
    return out;
}

std::optional<bool> target_module_builtin(const util::HostFs& fs, std::string_view kernel_release, std::string_view name)
{
    if (kernel_release.empty() || kernel_release.find('/') != std::string_view::npos) {
        return std::nullopt;
    }
    auto text = fs.read_file("/lib/modules/" + std::string(kernel_release) + "/modules.builtin");
    if (!text) {
        return std::nullopt;
    }
    const std::string key = module_key(name);
    for (const auto& line : util::split_lines(*text)) {
        // kernel/drivers/usb/host/xhci-pci.ko
        auto base = line.substr(line.rfind('/') == std::string::npos ? 0 : line.rfind('/') + 1);
        if (base.size() > 3 && base.ends_with(".ko")) {
            base.resize(base.size() - 3);
        }
        if (module_key(base) == key) {
            return true;
        }
    }
    return false;
}

} // namespace detail

void plan_host(const PlanContext& ctx, Plan& plan)
{
    detail::HostInputs in;
    const auto& inv = ctx.inventory;
    in.kernel_release = inv.host.kernel;
    if (inv.host.kernel) {
        in.kernel_version = util::major_minor(*inv.host.kernel);
    }
    std::set<std::string> ids;
    for (const auto* card : ctx.selected) {
        in.boot_vga_selected = in.boot_vga_selected || card->boot_vga;
        if (ctx.request.acs_override == AcsOverride::yes && !card->other_endpoints.empty()) {
            in.acs_override = true;
        }
        for (const auto& fn : card->functions) {
            in.functions.push_back(fn);
            if (const auto* d = inv.find(fn); d != nullptr && !d->vendor_device().empty()) {
                ids.insert(d->vendor_device());
            }
        }
    }
    std::sort(in.functions.begin(), in.functions.end());
    in.vfio_ids.assign(ids.begin(), ids.end());
    plan.vfio_ids = in.vfio_ids;
    if (!in.kernel_version) {
        plan.warnings.push_back("the running kernel release is unknown (/proc/sys/kernel/osrelease): decisions that depend on the "
                                "kernel version assume a current Proxmox VE kernel");
    }

    detail::plan_cmdline(ctx, plan, in);
    detail::plan_modules(ctx, plan, in);
    detail::plan_modprobe(ctx, plan, in);
    detail::plan_readiness(ctx, plan, in);

    // update-initramfs and the boot loader's refresh, as the files written call for them.
    add_file_steps(plan, inv.host.bootloader);
    if (!plan.files.empty()) {
        detail::plan_kernel_hook(ctx, plan); // no after-step: it acts when a kernel is installed
    }
    if (!plan.files.empty()) {
        plan.notes.push_back("a reboot is needed: the kernel command line and the early vfio-pci binding only take effect at boot");
        plan.notes.push_back("after the reboot, 'passthru verify --vm " + ctx.request.vm
                             + "' checks that the IOMMU is on, the kernel command line carries the planned arguments, the vfio modules are "
                               "loaded, every function of the selected cards is bound to vfio-pci, devices that stay on the host "
                               "kept their drivers, and /dev/vfio/<group> exists for each card's group");
    }
}

} // namespace passthru::plan
