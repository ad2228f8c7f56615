// SPDX-License-Identifier: GPL-2.0-or-later
// The one way passthru parses a JSON document (a journal manifest, the
// pending plan, a saved plan, a profile, the cluster's VM list): nested at
// most k_json_max_depth levels, so a hostile document can never build a
// value that the library then copies or compares by recursion deep enough
// to exhaust the stack.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/error.hpp"

namespace passthru::util {

// Deeper than any document passthru writes or reads (a plan nests about six
// levels) and far below what recursion over a value could overflow.
inline constexpr int k_json_max_depth = 64;

// TEXT as one JSON document. Not JSON: Errc `invalid`, "WHAT: not a JSON
// document". Nested deeper than k_json_max_depth: refused (Errc::precondition),
// whatever `invalid` is; nothing deeper than the bound is ever built.
Result<nlohmann::json> parse_json(std::string_view text, const std::string& what, Errc invalid = Errc::parse);

} // namespace passthru::util
