// SPDX-License-Identifier: GPL-2.0-or-later
// /etc/modprobe.d/passthru-vfio.conf: how vfio-pci claims the cards, the
// softdeps that load it before any host driver, the NVIDIA blacklist when no
// NVIDIA GPU stays on the host, kvm and vfio_iommu_type1 options. Lines of
// other modprobe.d files that would fight it are fixed in place; the host's
// configuration is read by libkmod (docs/facts.md: modules, modprobe-config).
//
// Binding. By id (`options vfio-pci ids=...`) only when no device that stays
// on the host has one of the ids: vfio-pci claims every device with a listed
// id. Otherwise by address: an `install vfio-pci` hook sets driver_override
// on exactly the selected functions (after checking that the slot still holds
// the same vendor:device), unbinds a function a host driver already holds,
// loads vfio-pci with `modprobe --ignore-install`, and asks the kernel to
// probe the functions. The hook runs wherever vfio-pci is loaded through
// modprobe: from the initramfs module list, from modules-load.d, and before
// every host driver named in a softdep (kmod runs the install command of a
// softdep module too). It lives in modprobe.d, which mkinitramfs copies into
// the initramfs, so no extra hook script is needed. A udev rule was not
// chosen: the initramfs does not carry /etc/udev/rules.d, and a driver that
// is already loaded binds a device before udev sees it.
//
// This file decides the binding, the softdeps and the blacklist; the lines of
// other modprobe.d files are fixed in modprobe_fixes.cpp, and passthru-vfio.conf
// is rendered in modprobe_render.cpp (their shared state: modprobe_detail.hpp).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "plan/host/drivers.hpp"
#include "plan/host/host_detail.hpp"
#include "plan/host/modprobe_detail.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

// The module that provides a PCI driver, from /sys/bus/pci/drivers/<drv>/module,
// else from the data's driver_modules.
std::string driver_module(const util::HostFs& fs, const HostDriverData& drivers, const std::string& driver)
{
    if (auto link = fs.read_link("/sys/bus/pci/drivers/" + driver + "/module")) {
        return module_key(util::base_name(*link));
    }
    if (auto it = drivers.driver_modules.find(driver); it != drivers.driver_modules.end()) {
        return it->second;
    }
    return module_key(driver);
}

bool vgpu_host(const ModprobeJob& job)
{
    return job.ctx.inventory.host.vgpu_host();
}

// A vgpu_keep driver of the data: on a vGPU host it gets no softdep or blacklist.
bool vgpu_kept(const ModprobeJob& job, const std::string& module)
{
    return vgpu_host(job) && std::any_of(job.drivers.drivers.begin(), job.drivers.drivers.end(), [&](const HostDriver& d) {
               return d.vgpu_keep && d.module == module_key(module);
           });
}

// --- binding: ids when no identical device stays, else by address ----------

// Why ids= cannot bind the selected functions; empty when it can.
std::string ids_obstacle(const ModprobeJob& job)
{
    const auto& inv = job.ctx.inventory;
    const std::set<scan::PciAddress> selected(job.in.functions.begin(), job.in.functions.end());
    std::vector<std::string> collisions;
    bool unknown_id = false;
    for (const auto& fn : job.in.functions) {
        const auto* d = inv.find(fn);
        if (d == nullptr || d->vendor_device().empty()) {
            unknown_id = true;
        }
    }
    for (const auto& d : inv.devices) {
        if (selected.contains(d.address) || d.vendor_device().empty()) {
            continue;
        }
        if (std::binary_search(job.in.vfio_ids.begin(), job.in.vfio_ids.end(), d.vendor_device())) {
            collisions.push_back(describe_device(inv, d.address));
        }
    }
    // A selected function held by a built-in driver: ids= cannot take it away.
    std::vector<std::string> builtin_held;
    for (const auto& fn : job.in.functions) {
        const auto* d = inv.find(fn);
        if (d != nullptr && d->driver && *d->driver != "vfio-pci") {
            const auto mod = driver_module(job.ctx.fs, job.drivers, *d->driver);
            if (target_module_builtin(job.ctx.fs, job.in.kernel_release.value_or(""), mod) == true) {
                builtin_held.push_back(fn.str() + " (" + *d->driver + ", built into the kernel)");
            }
        }
    }
    if (!collisions.empty()) {
        return "devices with the same vendor:device ids stay on the host (" + util::join(collisions, "; ")
               + "), and ids= would claim them too";
    }
    if (unknown_id) {
        return "a selected function has no readable vendor:device id";
    }
    if (!builtin_held.empty()) {
        return "a built-in driver holds " + util::join(builtin_held, ", ")
               + " before vfio-pci loads, and ids= never takes a device from its driver";
    }
    return {};
}

void choose_binding(ModprobeJob& job)
{
    job.binding_why = ids_obstacle(job);
    if (job.binding_why.empty() && vgpu_host(job)) {
        job.binding_why = "this host serves vGPUs, so its GPU driver stays loaded with no softdep to order vfio-pci "
                          "before it, and ids= never takes a device from a driver that holds it";
    }
    job.by_address = !job.binding_why.empty();
    job.plan.binding = job.by_address ? "address" : "ids";
    if (job.by_address) {
        job.binding_reason = "binds by address (driver_override for " + std::to_string(job.in.functions.size())
                             + " functions, from an install command for vfio-pci), not by ids=: " + job.binding_why;
    } else {
        job.binding_reason = "binds by id: ids=" + util::join(job.in.vfio_ids, ",")
                             + " (comma-separated, no spaces) lists every function of the "
                               "selected cards, and no device that stays on the host has one of these ids";
    }
}

// --- softdeps: every loadable host driver that could claim a function -------

void choose_softdeps(ModprobeJob& job)
{
    auto want_softdep = [&](const std::string& module, const std::string& why) {
        if (vgpu_kept(job, module)) {
            if (std::find(job.vgpu_kept.begin(), job.vgpu_kept.end(), module_key(module)) == job.vgpu_kept.end()) {
                job.vgpu_kept.push_back(module_key(module));
            }
            return;
        }
        auto& s = job.softdeps[module];
        s.module = module;
        if (s.why.empty()) {
            s.why = why;
        }
    };
    for (const auto& fn : job.in.functions) {
        const auto* d = job.ctx.inventory.find(fn);
        if (d == nullptr) {
            continue;
        }
        for (const auto& driver : job.drivers.drivers) {
            if (driver_claims(driver, *d)) {
                want_softdep(driver.module, driver.reason(fn.str()));
            }
        }
        if (d->driver && *d->driver != "vfio-pci" && *d->driver != "pci-stub") {
            want_softdep(driver_module(job.ctx.fs, job.drivers, *d->driver), "currently bound to " + fn.str());
        }
        // what udev would load for the function, also once vfio-pci holds it: so that the
        // plan made after the reboot keeps the softdep of the driver it kept off the card
        for (const auto& module : target_alias_modules(job.ctx.fs, job.in.kernel_release.value_or(""), *d)) {
            if (module_key(module) != "vfio_pci" && module_key(module) != "pci_stub") {
                want_softdep(module, "the module aliases of kernel " + job.in.kernel_release.value_or("?") + " match " + fn.str());
            }
        }
    }
    std::vector<std::string> builtin_softdeps;
    for (auto it = job.softdeps.begin(); it != job.softdeps.end();) {
        if (target_module_builtin(job.ctx.fs, job.in.kernel_release.value_or(""), it->first) == true) {
            builtin_softdeps.push_back(it->first);
            it = job.softdeps.erase(it);
        } else {
            ++it;
        }
    }
    if (!builtin_softdeps.empty()) {
        job.plan.notes.push_back("no softdep for " + util::join(builtin_softdeps, ", ") + ": built into kernel "
                                 + job.in.kernel_release.value_or("?") + ", never loaded as a module");
    }
}

// --- blacklist: a vendor's drivers only when no GPU of that vendor stays ----

VendorBlacklist vendor_blacklist(const ModprobeJob& job, const std::shared_ptr<const scan::GpuVendor>& vendor)
{
    const auto& selected = job.ctx.selected;
    VendorBlacklist out;
    out.vendor = vendor;
    for (const auto& card : job.ctx.inventory.gpus) {
        if (card.vendor_row != vendor) {
            continue;
        }
        if (std::find(selected.begin(), selected.end(), &card) != selected.end()) {
            out.selected = true;
        } else {
            out.staying.push_back(card.slot);
        }
    }
    out.blacklist = out.selected && out.staying.empty() && !(vendor->vgpu && vgpu_host(job));
    return out;
}

// The vGPU stack of a vendor that has one stays loaded on a vGPU host.
void note_vgpu_host(ModprobeJob& job, const VendorBlacklist& vb)
{
    const auto& host = job.ctx.inventory.host;
    const std::string& name = vb.vendor->name;
    job.plan.notes.push_back(name + " vGPU host (" + util::join(host.vgpu_evidence, "; ") + "): passthru keeps the nvidia driver"
                             + (job.vgpu_kept.empty() ? std::string() : " (no softdep for " + util::join(job.vgpu_kept, ", ") + ")")
                             + " and blacklists no " + name
                             + " driver, because the vGPU manager needs nvidia loaded for the GPUs that "
                               "serve vGPUs to other VMs; the selected cards are bound to vfio-pci by address instead");
    if (vb.staying.empty() && vb.selected) {
        job.plan.warnings.push_back("every " + name + " GPU of this vGPU host goes to VM " + job.ctx.request.vm
                                    + ": no GPU is left to serve vGPUs; stop the vGPU manager (nvidia-vgpu-mgr) if that is meant");
    }
}

void choose_blacklist(ModprobeJob& job)
{
    for (const auto& vendor : job.ctx.inventory.vendors.rows) {
        job.vendor_blacklists.push_back(vendor_blacklist(job, vendor));
        if (vendor->vgpu && vgpu_host(job)) {
            note_vgpu_host(job, job.vendor_blacklists.back());
        }
    }
}

} // namespace

void plan_modprobe(const PlanContext& ctx, Plan& plan, const HostInputs& in)
{
    const auto loaded = data::load_host_drivers(ctx.data);
    if (!loaded) {
        throw loaded.error();
    }
    // Drivers that exist only in newer kernels (nova_core) count where the target has them.
    std::vector<std::string> kernel_driver_reasons;
    const HostDriverData drivers = drivers_for_kernel(ctx.fs, in.kernel_release, in.kernel_version, *loaded, kernel_driver_reasons);
    ModprobeJob job(ctx, plan, in, drivers);
    job.kernel_driver_reasons = std::move(kernel_driver_reasons);
    job.want_unsafe_interrupts = ctx.inventory.host.iommu.interrupt_remapping == false;
    choose_binding(job);
    choose_softdeps(job);
    choose_blacklist(job);
    fix_other_files(job);
    render_modprobe_conf(job);
}

} // namespace passthru::plan::detail
