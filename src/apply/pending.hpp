// SPDX-License-Identifier: GPL-2.0-or-later
// The host's pending plan: what `passthru plan` last planned and nobody has
// applied yet, kept in passthru's state directory so that `passthru apply
// --dry-run` and `passthru apply` without a request take it up (the
// terraform plan/apply workflow). It is a saved plan like `plan --out FILE`
// and gets the same checks when applied: it must still match the host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "plan/plan.hpp"
#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::apply {

inline constexpr std::string_view k_pending_plan = "/var/lib/passthru/pending-plan.json";
inline constexpr std::string_view k_pending_schema = "passthru.pending/1";

struct PendingPlan
{
    plan::Plan plan;
    std::string created;            // UTC, ISO 8601
    std::int64_t created_epoch = 0; // seconds since the epoch
};

// Records plan_json (a passthru.plan/1 document) as the pending plan, mode
// 0600. The caller decides whether it may (root on a live host).
Result<void> save_pending(const util::HostFs& fs, const nlohmann::json& plan_json);
// nullopt when there is none; Errc::parse when the file is not a pending plan.
Result<std::optional<PendingPlan>> load_pending(const util::HostFs& fs);
// Forgets the pending plan (after it, or any other plan, was applied).
Result<void> clear_pending(const util::HostFs& fs);
// "4 min", "2 h", "3 days": how long ago `created_epoch` was.
std::string age_text(std::int64_t created_epoch);

} // namespace passthru::apply
