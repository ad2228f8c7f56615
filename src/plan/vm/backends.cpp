// SPDX-License-Identifier: GPL-2.0-or-later
// The VM backends, one row each (plan/plan.hpp: BackendRow): their word, what
// the request options mean for them, and the planner of the VM side.
#include <algorithm>
#include <array>

#include "plan/planner.hpp"
#include "plan/vm/profile.hpp"
#include "plan/vm/vm_detail.hpp"

namespace passthru::plan {

namespace {

// Proxmox VE: the VM profile (--vm-profile, or the default) over the VM config.
void plan_proxmox_backend(const PlanContext& ctx, Plan& plan)
{
    auto profile = load_vm_profile(ctx.data, ctx.request.vm_profile.value_or(std::string(k_default_vm_profile)));
    if (!profile) {
        throw std::move(profile.error());
    }
    detail::plan_proxmox_vm(ctx, *profile, plan);
}

constexpr std::array<BackendRow, 2> k_backend_rows = {{
    {.backend = Backend::proxmox,
     .name = "proxmox",
     .numeric_vmid = true,
     .cluster_mapping = true,
     .connect_uri = false,
     .plan_vm = plan_proxmox_backend},
    {.backend = Backend::libvirt,
     .name = "libvirt",
     .numeric_vmid = false,
     .cluster_mapping = false,
     .connect_uri = true,
     .plan_vm = detail::plan_libvirt_domain},
}};

} // namespace

std::span<const BackendRow> backend_rows()
{
    return k_backend_rows;
}

const BackendRow& backend_row(Backend backend)
{
    const auto* row = std::find_if(k_backend_rows.begin(), k_backend_rows.end(), [&](const BackendRow& r) { return r.backend == backend; });
    return row != k_backend_rows.end() ? *row : k_backend_rows.front();
}

std::string backend_names()
{
    std::string out;
    for (const auto& row : k_backend_rows) {
        out += std::string(out.empty() ? "" : " or ") + std::string(row.name);
    }
    return out;
}

std::string_view to_string(Backend backend)
{
    return backend_row(backend).name;
}

std::optional<Backend> backend_from(std::string_view word)
{
    for (const auto& row : k_backend_rows) {
        if (row.name == word) {
            return row.backend;
        }
    }
    return std::nullopt;
}

} // namespace passthru::plan
