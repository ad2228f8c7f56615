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
    // Notes in full; otherwise one over k_note_length characters is shortened
    // (its parenthesised details first) and says so. --json has them in full.
    bool verbose = false;
};

inline constexpr std::size_t k_note_length = 200;

// A note for the human plan: NOTE itself when short enough or `verbose`;
// else without its longest parenthesised details, one after the other,
// then cut at a word, ending " (in full: --verbose)".
std::string shown_note(const std::string& note, bool verbose);

std::string render_plan(const plan::Plan& plan, const RenderOptions& options);

// Where the plan just shown lives, for the command that applies it.
enum class PlanSource
{
    pending, // recorded as the host's pending plan: `apply` alone
    saved,   // a saved plan file: `apply --plan FILE`
    request, // neither: `apply` with the request again
};

// The last line `plan` and `apply --dry-run` print: "Next step: passthru
// [--root DIR] apply ..." with the global options in use.
std::string apply_step(const plan::Plan& plan, PlanSource source, const std::string& saved_file = {});
// Only the diffs of every file change, in plan order (what patch(1) applies).
std::string render_plan_diffs(const plan::Plan& plan);

} // namespace passthru::cli
