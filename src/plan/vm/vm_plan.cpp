// SPDX-License-Identifier: GPL-2.0-or-later
// The VM side of a plan: the options the backend does not take are refused,
// then the backend's planner (plan/vm/backends.cpp) plans it.
#include "plan/planner.hpp"

namespace passthru::plan {

namespace {

// "--backend libvirt": the backends that take an option, for its refusal.
std::string backends_taking(bool BackendRow::*option)
{
    std::string out;
    for (const auto& row : backend_rows()) {
        if (row.*option) {
            out += std::string(out.empty() ? "" : " or ") + "--backend " + std::string(row.name);
        }
    }
    return out;
}

} // namespace

void plan_vm(const PlanContext& ctx, Plan& plan)
{
    if (ctx.request.vm.empty()) {
        plan.notes.emplace_back("no --vm given: only the host side is planned");
        return;
    }
    const BackendRow& backend = backend_row(ctx.request.backend);
    if (ctx.request.mapping && !backend.cluster_mapping) {
        throw Error(Errc::usage, "--mapping is a Proxmox VE cluster mapping; it does not apply to --backend " + std::string(backend.name));
    }
    if (ctx.request.connect_uri && !backend.connect_uri) {
        throw Error(Errc::usage, "--connect is for " + backends_taking(&BackendRow::connect_uri));
    }
    backend.plan_vm(ctx, plan);
}

} // namespace passthru::plan
