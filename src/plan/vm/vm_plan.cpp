// SPDX-License-Identifier: GPL-2.0-or-later
// The VM side of a plan: which backend, which profile.
#include "plan/planner.hpp"
#include "plan/vm/internal.hpp"
#include "plan/vm/profile.hpp"

namespace passthru::plan {

void plan_vm(const PlanContext& ctx, Plan& plan)
{
    if (ctx.request.vm.empty()) {
        plan.notes.emplace_back("no --vm given: only the host side is planned");
        return;
    }
    if (ctx.request.backend == Backend::libvirt) {
        if (ctx.request.mapping) {
            throw Error(Errc::usage, "--mapping is a Proxmox VE cluster mapping; it does not apply to --backend libvirt");
        }
        detail::plan_libvirt_domain(ctx, plan);
        return;
    }
    if (ctx.request.connect_uri) {
        throw Error(Errc::usage, "--connect is for --backend libvirt");
    }
    auto profile = load_vm_profile(ctx.data, ctx.request.vm_profile.value_or(std::string(k_default_vm_profile)));
    if (!profile) {
        throw std::move(profile.error());
    }
    detail::plan_proxmox_vm(ctx, *profile, plan);
}

} // namespace passthru::plan
