// SPDX-License-Identifier: GPL-2.0-or-later
// The saved plan, schema "passthru.plan/1" (docs/plan-json.md): what
// `plan --json` prints, what `plan --out FILE` writes and `apply --plan FILE`
// loads. plan_from_json(plan_to_json(p)) == p for every field.
#pragma once

#include <nlohmann/json.hpp>

#include "plan/plan.hpp"
#include "util/error.hpp"

namespace passthru::plan {

inline constexpr const char* k_plan_schema = "passthru.plan/1";

nlohmann::json plan_to_json(const Plan& plan);
// Errc::parse with the offending field when the document is not a valid
// passthru.plan/1 plan (wrong schema, missing or mistyped field).
Result<Plan> plan_from_json(const nlohmann::json& doc);

nlohmann::json request_to_json(const Request& request);
Result<Request> request_from_json(const nlohmann::json& doc);

} // namespace passthru::plan
