// SPDX-License-Identifier: GPL-2.0-or-later
// The human plan: refusals, each file change with its one-line reasons and
// the unified diff against the current file, the commands, warnings and
// notes. `plan` and `apply --dry-run` both print it, so their diffs match.
#pragma once

#include <string>

#include "plan/plan.hpp"

namespace passthru::cli {

struct RenderOptions
{
    bool color = false;
    bool show_diffs = true;
};

std::string render_plan(const plan::Plan& plan, const RenderOptions& options);
// Only the diffs of every file change, in plan order (what patch(1) applies).
std::string render_plan_diffs(const plan::Plan& plan);

} // namespace passthru::cli
