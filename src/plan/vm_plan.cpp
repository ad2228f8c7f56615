// SPDX-License-Identifier: GPL-2.0-or-later
// Placeholder until the VM side lands: it plans nothing and says so.
#include "plan/planner.hpp"

namespace passthru::plan {

void plan_vm(const PlanContext& /*ctx*/, Plan& plan)
{
    plan.warnings.emplace_back("the VM side (VM config, mappings, libvirt) is not built yet: no VM change is planned");
}

} // namespace passthru::plan
