// SPDX-License-Identifier: GPL-2.0-or-later
// A saved plan (plan --out, or the pending plan that `passthru plan`
// records) is trusted only as far as passthru itself would make it: apply
// plans its recorded request again on the host as it is now and compares.
// Any file, mode, content, after-step or domain the planners would not
// produce is a difference, and a plan with differences is refused.
#pragma once

#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace passthru::plan {

// What `saved` has that `derived` (made from saved.request on this host)
// does not, one line each ("writes /usr/local/bin/x, which passthru does
// not plan"); empty when they are the same plan.
std::vector<std::string> saved_plan_differences(const Plan& saved, const Plan& derived);

} // namespace passthru::plan
