// SPDX-License-Identifier: GPL-2.0-or-later
// A saved plan (apply --plan FILE, the pending plan): any document is a plan
// or one error, never a crash; a plan that loads prints as JSON that loads to
// the same plan (plan_json.hpp promises the round trip).
#include <nlohmann/json.hpp>

#include "fuzz.hpp"
#include "plan/plan_json.hpp"

using namespace passthru;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto doc = nlohmann::json::parse(fuzz::text_of(data, size), nullptr, false);
    if (doc.is_discarded()) {
        return 0;
    }
    if (const auto plan = plan::plan_from_json(doc)) {
        const auto printed = plan::plan_to_json(*plan);
        const auto again = plan::plan_from_json(printed);
        fuzz::require(again.has_value() && plan::plan_to_json(*again) == printed, "a loaded plan round-trips");
    }
    if (const auto request = plan::request_from_json(doc)) {
        const auto again = plan::request_from_json(plan::request_to_json(*request));
        fuzz::require(again.has_value() && plan::request_to_json(*again) == plan::request_to_json(*request),
                      "a loaded request round-trips");
    }
    return 0;
}
