// SPDX-License-Identifier: GPL-2.0-or-later
// What unit tests read of a plan: the change to one file, and the after-steps as lines.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.hpp"
#include "util/strings.hpp"

namespace passthru::test {

// The planned change to PATH, or nullptr when the plan does not touch it.
inline const plan::FileChange* file_of(const plan::Plan& p, std::string_view path)
{
    auto it = std::find_if(p.files.begin(), p.files.end(), [&](const plan::FileChange& f) { return f.path == path; });
    return it == p.files.end() ? nullptr : &*it;
}

// Each after-step's argv joined by spaces, in order.
inline std::vector<std::string> command_lines(const plan::Plan& p)
{
    std::vector<std::string> out;
    out.reserve(p.commands.size());
    for (const auto& c : p.commands) {
        out.push_back(util::join(c.argv, " "));
    }
    return out;
}

} // namespace passthru::test
