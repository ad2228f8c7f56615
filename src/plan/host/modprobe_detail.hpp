// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to plan/host/: what the steps of plan_modprobe share. modprobe.cpp
// decides the binding, softdeps and blacklist, modprobe_fixes.cpp fixes the
// other modprobe.d files, modprobe_render.cpp writes passthru-vfio.conf.
// Not a public interface.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "plan/host/drivers.hpp"
#include "plan/host/host_detail.hpp"

namespace passthru::plan::detail {

struct Softdep
{
    std::string module;
    std::vector<std::string> pre; // after vfio-pci
    std::vector<std::string> post;
    std::string why;
};

// The blacklist decision for one GPU vendor (profiles/host/vendors.json): its
// blacklist drivers go when a card of it is selected and none stays on the host
// (and, for a vendor with vGPU, the host is no vGPU host).
struct VendorBlacklist
{
    std::shared_ptr<const scan::GpuVendor> vendor;
    bool selected = false;
    std::vector<std::string> staying; // slots of its cards that stay on the host
    bool blacklist = false;
};

// What the steps of plan_modprobe share: the request, the host's drivers,
// and what the earlier steps decided.
struct ModprobeJob
{
    ModprobeJob(const PlanContext& c, Plan& p, const HostInputs& i, const HostDriverData& d) : ctx(c), plan(p), in(i), drivers(d) {}

    const PlanContext& ctx;
    Plan& plan;
    const HostInputs& in;
    const HostDriverData& drivers;
    // drivers that count only on this kernel (nova_core), and why
    std::vector<std::string> kernel_driver_reasons;
    // binding
    bool by_address = false;
    std::string binding_why;
    std::string binding_reason;
    // softdeps, by module
    std::map<std::string, Softdep> softdeps;
    // blacklist
    std::vector<VendorBlacklist> vendor_blacklists; // one per row of vendors.json, in its order
    std::set<std::string> blacklisted_elsewhere;
    bool want_unsafe_interrupts = false;
    // NVIDIA vGPU host: the drivers kept loaded for it (vgpu_keep) that would have had a softdep
    std::vector<std::string> vgpu_kept;
};

// Fixes or reports the lines of the host's other modprobe.d files that would
// fight passthru-vfio.conf (modprobe_fixes.cpp).
void fix_other_files(ModprobeJob& job);
// Renders passthru-vfio.conf and stages it (modprobe_render.cpp).
void render_modprobe_conf(ModprobeJob& job);

} // namespace passthru::plan::detail
