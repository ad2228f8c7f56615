// SPDX-License-Identifier: GPL-2.0-or-later
// The saved plan, schema "passthru.plan/1" (docs/plan.md, "JSON"): what
// `plan --json` prints, what `plan --out FILE` writes and `apply --plan FILE`
// loads. plan_from_json(plan_to_json(p)) == p for every field.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "plan/plan.hpp"
#include "util/error.hpp"

namespace passthru::plan {

inline constexpr const char* k_plan_schema = "passthru.plan/1";

nlohmann::json plan_to_json(const Plan& plan);
// Errc::parse with the offending field when the document is not a valid
// passthru.plan/1 plan (wrong schema, missing or mistyped field).
Result<Plan> plan_from_json(const nlohmann::json& doc);

// How much request_from_json checks: validate, as for a request passthru is
// about to act on (plan/request.hpp's validate_request); shape_only, the
// members and their types, as for a request a journal recorded, which stays
// readable when the checks of a later passthru grow.
enum class RequestCheck
{
    validate,
    shape_only,
};

nlohmann::json request_to_json(const Request& request);
Result<Request> request_from_json(const nlohmann::json& doc, RequestCheck check = RequestCheck::validate);

// A selected card (a GPU or an NVSwitch), as the plan and the journal hold it.
// Reading: slot and functions are required; name, ids, iommu_groups and
// boot_vga may be missing (journals before them). Errc::parse names `where`.
nlohmann::json selected_gpu_to_json(const SelectedGpu& gpu);
Result<SelectedGpu> selected_gpu_from_json(const nlohmann::json& doc, std::string_view where);

} // namespace passthru::plan
