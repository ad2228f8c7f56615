// SPDX-License-Identifier: GPL-2.0-or-later
#include "apply/pending.hpp"

#include <ctime>

#include "apply/journal.hpp"
#include "plan/plan_json.hpp"
#include "util/json.hpp"

namespace passthru::apply {

using nlohmann::json;

Result<void> save_pending(const util::HostFs& fs, const json& plan_json)
{
    const json doc{{"schema", k_pending_schema},
                   {"created", utc_now()},
                   {"created_epoch", static_cast<std::int64_t>(std::time(nullptr))},
                   {"plan", plan_json}};
    if (auto r = fs.create_directories(k_state_dir); !r) {
        return r;
    }
    std::string text;
    try {
        text = doc.dump(2) + "\n";
    } catch (const json::type_error& e) {
        return fail(Errc::parse, std::string("the plan cannot be written as JSON: ") + e.what());
    }
    // Remove first, so the new file gets mode 0600 whatever an older one had.
    if (fs.exists(k_pending_plan)) {
        if (auto r = fs.remove_file(k_pending_plan); !r) {
            return r;
        }
    }
    return fs.write_file_atomic(k_pending_plan, text, 0600, util::FsSync::yes);
}

Result<std::optional<PendingPlan>> load_pending(const util::HostFs& fs)
{
    if (fs.stat(k_pending_plan).type == util::FileType::missing) {
        return std::optional<PendingPlan>{};
    }
    auto text = fs.read_file(k_pending_plan);
    if (!text) {
        return tl::unexpected(text.error());
    }
    const auto parsed = util::parse_json(*text, std::string(k_pending_plan));
    if (!parsed && parsed.error().code() == Errc::precondition) {
        return tl::unexpected(parsed.error());
    }
    const json doc = parsed ? *parsed : json();
    if (!doc.is_object() || doc.value("schema", "") != k_pending_schema || !doc.contains("plan")) {
        return fail(Errc::parse, std::string(k_pending_plan) + " is not a " + std::string(k_pending_schema) + " document");
    }
    auto p = plan::plan_from_json(doc.at("plan"));
    if (!p) {
        return fail(Errc::parse, std::string(k_pending_plan) + ": " + p.error().what());
    }
    PendingPlan out;
    out.plan = std::move(*p);
    if (doc.contains("created") && doc["created"].is_string()) {
        out.created = doc["created"].get<std::string>();
    }
    if (doc.contains("created_epoch") && doc["created_epoch"].is_number_integer()) {
        out.created_epoch = doc["created_epoch"].get<std::int64_t>();
    }
    return std::optional<PendingPlan>(std::move(out));
}

Result<void> clear_pending(const util::HostFs& fs)
{
    if (fs.stat(k_pending_plan).type == util::FileType::missing) {
        return {};
    }
    return fs.remove_file(k_pending_plan);
}

std::string age_text(std::int64_t created_epoch)
{
    const std::int64_t now = std::time(nullptr);
    const std::int64_t s = now > created_epoch ? now - created_epoch : 0;
    if (s < 120) {
        return std::to_string(s) + " s";
    }
    if (s < 2 * 3600) {
        return std::to_string(s / 60) + " min";
    }
    if (s < 2 * 86400) {
        return std::to_string(s / 3600) + " h";
    }
    return std::to_string(s / 86400) + " days";
}

} // namespace passthru::apply
