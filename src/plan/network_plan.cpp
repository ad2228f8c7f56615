// SPDX-License-Identifier: GPL-2.0-or-later
// Placeholder until bond/bridge planning lands: a network request is refused.
#include "plan/planner.hpp"

namespace passthru::plan {

void plan_network(const PlanContext& ctx, Plan& plan)
{
    if (ctx.request.network) {
        plan.refusals.push_back({"bond/bridge planning is not built yet", {}});
    }
}

} // namespace passthru::plan
