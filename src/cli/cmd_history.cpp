// SPDX-License-Identifier: GPL-2.0-or-later
// passthru history [--json]: the generations under <root>/var/lib/passthru.
#include <algorithm>
#include <cstdio>
#include <map>

#include "apply/journal.hpp"
#include "apply/pending.hpp"
#include "apply/rollback.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "cli/request_options.hpp"
#include "plan/plan_json.hpp"
#include "util/strings.hpp"

namespace passthru::cli {

namespace {

std::string request_text(const apply::Manifest& m)
{
    if (m.rollback_to_before) {
        return "back to before generation " + std::to_string(*m.rollback_to_before);
    }
    if (!m.request) {
        return "";
    }
    const plan::Request& req = *m.request;
    if (req.kernel) {
        return "kernel " + std::string(plan::to_string(req.kernel->action))
               + (req.kernel->release.empty() ? "" : " " + req.kernel->release);
    }
    std::string out;
    auto add = [&](const std::string& value, const char* flag) {
        if (!value.empty()) {
            out += std::string(out.empty() ? "" : " ") + flag + " " + value;
        }
    };
    add(req.vm, "--vm");
    add(req.gpus, "--gpus");
    for (const auto& c : req.containers) {
        add(c.ct, "--ct");
        add(c.gpus, "--gpus");
    }
    if (req.backend != plan::Backend::proxmox) {
        out += " --backend " + std::string(plan::to_string(req.backend));
    }
    if (req.network) {
        out += " (+network)";
    }
    return out;
}

} // namespace

void history_options(po::options_description& options)
{
    options.add_options()("json", "print the generations as one JSON document (schema passthru.history/1)");
}

namespace {

// The pending plan, for the JSON document and the human listing.
std::optional<apply::PendingPlan> pending_plan(const Context& ctx)
{
    auto pending = apply::load_pending(ctx.fs);
    if (!pending) {
        print_warning(ctx, pending.error().what());
        return std::nullopt;
    }
    return std::move(*pending);
}

} // namespace

namespace {

// The journal as history shows it.
struct History
{
    std::vector<apply::Manifest> all;
    std::vector<std::string> errors;
    std::map<std::uint64_t, std::uint64_t> undone_by; // generation -> the rollback that undid it
    std::vector<std::uint64_t> active;
    bool running = false;
};

History read_history(const apply::Journal& journal)
{
    History h;
    h.all = journal.load_all(&h.errors);
    for (const auto& m : h.all) {
        if (m.kind == apply::GenerationKind::rollback && m.state == apply::GenerationState::committed) {
            for (auto id : m.undoes) {
                h.undone_by[id] = m.id;
            }
        }
    }
    h.running = journal.locked_by_other();
    for (const auto& m : apply::active_generations(h.all)) {
        h.active.push_back(m.id);
    }
    return h;
}

int print_history_json(const History& h, const std::optional<apply::PendingPlan>& pending)
{
    nlohmann::json gens = nlohmann::json::array();
    for (const auto& m : h.all) {
        auto j = apply::to_json(m);
        const auto by = h.undone_by.find(m.id);
        j["undone_by"] = by != h.undone_by.end() ? nlohmann::json(by->second) : nlohmann::json(nullptr);
        gens.push_back(std::move(j));
    }
    nlohmann::json doc{{"schema", "passthru.history/1"}, {"generations", std::move(gens)}, {"errors", h.errors}, {"active", h.active}};
    doc["pending_plan"] = pending ? nlohmann::json{{"created", pending->created}, {"request", plan::request_to_json(pending->plan.request)}}
                                  : nlohmann::json(nullptr);
    std::fputs((doc.dump(2) + "\n").c_str(), stdout);
    return h.errors.empty() ? exit_code::ok : exit_code::error;
}

void print_history_table(const History& h)
{
    util::TextTable table;
    table.add_row({"GEN", "TIME", "KIND", "STATE", "FILES", "REQUEST"});
    for (const auto& m : h.all) {
        std::string state(apply::to_string(m.state));
        if (const auto by = h.undone_by.find(m.id); by != h.undone_by.end()) {
            state += " (undone by " + std::to_string(by->second) + ")";
        }
        if (m.state == apply::GenerationState::pending) {
            state += h.running ? " (running)" : " (interrupted)";
        }
        if (std::find(h.active.begin(), h.active.end(), m.id) != h.active.end()) {
            state += " (active)";
        }
        std::string kind(apply::to_string(m.kind));
        table.add_row({std::to_string(m.id), m.created, kind, state, std::to_string(m.files.size()), request_text(m)});
    }
    std::fputs(table.render().c_str(), stdout);
}

void print_generation(const apply::Manifest& m)
{
    std::printf("\ngeneration %llu:\n", static_cast<unsigned long long>(m.id));
    for (const auto& f : m.files) {
        std::printf("  %-6s %s\n", std::string(plan::to_string(f.action)).c_str(), f.path.c_str());
    }
    for (const auto& c : m.commands) {
        std::printf("  run    %s  [%s]\n", util::shell_quote(c.argv).c_str(), std::string(apply::to_string(c.status)).c_str());
        for (const auto& r : c.created) {
            std::printf("         created %s %s (VM %s's %s)\n", r.kind.c_str(), r.id.c_str(), r.vm.c_str(), r.config_key.c_str());
        }
        for (const auto& line : c.output) {
            std::printf("         | %s\n", line.c_str());
        }
    }
    if (!m.error.empty()) {
        std::printf("  error: %s\n", m.error.c_str());
    }
}

// Which generations are applied now and how to undo one or all of them.
void print_active(const Context& ctx, const std::vector<std::uint64_t>& active)
{
    if (active.empty()) {
        return;
    }
    std::vector<std::string> ids;
    ids.reserve(active.size());
    for (auto id : active) {
        ids.push_back(std::to_string(id));
    }
    std::printf("\nApplied now: generation%s %s. 'passthru%s rollback' undoes %llu", ids.size() == 1 ? "" : "s",
                util::join(ids, ", ").c_str(), root_option(ctx).c_str(), static_cast<unsigned long long>(active.back()));
    if (active.size() > 1) {
        std::printf(" only; 'passthru%s rollback --to %llu' undoes all of them", root_option(ctx).c_str(),
                    static_cast<unsigned long long>(active.front()));
    }
    std::printf(".\n");
}

} // namespace

int run_history(Context& ctx, const po::variables_map& vm)
{
    const auto pending = pending_plan(ctx);
    const apply::Journal journal(ctx.fs);
    const History h = read_history(journal);
    if (vm.count("json") != 0U) {
        return print_history_json(h, pending);
    }
    if (pending) {
        std::printf("Pending plan: made %s ago (%s): passthru%s plan %s\n  'passthru%s apply --dry-run' shows it, 'passthru%s apply' "
                    "applies it\n\n",
                    apply::age_text(pending->created_epoch).c_str(), pending->created.c_str(), root_option(ctx).c_str(),
                    request_to_options(pending->plan.request).c_str(), root_option(ctx).c_str(), root_option(ctx).c_str());
    }
    if (h.all.empty() && h.errors.empty()) {
        std::printf("No generations: passthru has not changed this host.\n");
        return exit_code::ok;
    }
    print_history_table(h);
    for (const auto& m : h.all) {
        print_generation(m);
    }
    print_active(ctx, h.active);
    for (const auto& e : h.errors) {
        print_warning(ctx, e);
    }
    return h.errors.empty() ? exit_code::ok : exit_code::error;
}

} // namespace passthru::cli
