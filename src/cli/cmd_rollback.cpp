// SPDX-License-Identifier: GPL-2.0-or-later
// passthru rollback [--to N] [--force]: first undoes an interrupted
// generation if there is one (crash recovery); otherwise undoes the newest
// active generation, or with --to N every active generation from N on, as a
// new journaled generation of kind "rollback" (apply/rollback.hpp).
#include <cstdio>

#include "apply/journal.hpp"
#include "apply/rollback.hpp"
#include "apply/transaction.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "util/strings.hpp"

namespace passthru::cli {

void rollback_options(po::options_description& options)
{
    options.add_options()("to", po::value<std::uint64_t>(),
                          "restore the host to how it was before generation N (undoes N and every later one)")(
        "force", "roll back even files that were changed by hand since they were applied (the edits are kept in the new generation)")(
        "remove-volumes", "also delete the volumes the undone after-steps allocated (pvesm free); without it they are kept and named")(
        "dry-run", "show what would be restored and write nothing")("yes,y", "accepted for symmetry with apply; rollback does not ask");
}

namespace {

// Crash recovery: an interrupted generation is undone by itself (no new
// generation; it is marked rolled-back).
int recover_interrupted(Context& ctx, const po::variables_map& vm, const apply::Journal& journal, apply::Manifest& m, bool dry_run)
{
    std::printf("Generation %llu (%s, started %s) was interrupted (%s): restoring its %zu file(s).\n",
                static_cast<unsigned long long>(m.id), std::string(apply::to_string(m.kind)).c_str(), m.created.c_str(),
                std::string(apply::to_string(m.state)).c_str(), m.files.size());
    if (vm.count("to") != 0U) {
        print_note(ctx, "--to is ignored until the interrupted generation is undone; run rollback again afterwards");
    }
    if (dry_run) {
        for (auto it = m.files.rbegin(); it != m.files.rend(); ++it) {
            std::printf("  %s %s\n", it->before_sha256 ? "restore" : "remove ", it->path.c_str());
        }
        std::printf("Dry run: nothing was written.\n");
        return exit_code::ok;
    }
    auto report = apply::restore_generation(journal, ctx.runner, m, cli_progress(ctx), &libvirt_hooks());
    print_recorded_commands(ctx);
    if (!report.failures.empty()) {
        throw apply::rollback_failed_error(m.id, "generation " + std::to_string(m.id) + " was interrupted", report);
    }
    for (const auto& n : report.not_undone) {
        print_warning(ctx, "not undone automatically: " + n);
    }
    std::printf("Restored: %zu file(s) put back; generation %llu is now rolled-back.\n", report.restored.size(),
                static_cast<unsigned long long>(m.id));
    return exit_code::ok;
}

std::vector<std::string> id_texts(const std::vector<std::uint64_t>& ids)
{
    std::vector<std::string> out;
    out.reserve(ids.size());
    for (auto id : ids) {
        out.push_back(std::to_string(id));
    }
    return out;
}

// What the rollback will do, before it does it.
void print_rollback_plan(const Context& ctx, const apply::RollbackPlan& rb, bool to_given)
{
    const std::vector<std::string> ids = id_texts(rb.undoes);
    std::printf("Rolling back generation%s %s:\n", ids.size() == 1 ? "" : "s", util::join(ids, ", ").c_str());
    if (!to_given && rb.active.size() > 1) {
        // Several generations are active: say that this undoes only the newest.
        const std::vector<std::string> active = id_texts(rb.active);
        print_note(ctx, "generations " + util::join(active, ", ") + " are applied; this undoes only the newest, " + ids.front()
                            + "; 'passthru" + root_option(ctx) + " rollback --to " + active.front()
                            + "' undoes all of them (the host as before generation " + active.front() + ")");
    }
    for (const auto& c : rb.spec.files) {
        std::printf("  %s %s\n", c.action == apply::FileAction::remove ? "remove " : "restore", c.path.c_str());
    }
    for (const auto& c : rb.spec.commands) {
        std::printf("  then: %s\n", util::shell_quote(c.argv).c_str());
    }
    for (const auto& d : rb.drifted) {
        print_warning(ctx,
                      d + " was changed since it was applied; --force rolls it back anyway (its current content is kept in the journal)");
    }
    for (const auto& n : rb.not_undone) {
        print_warning(ctx, "not undone automatically: " + n);
    }
    for (const auto& k : rb.kept) {
        print_warning(ctx, k);
    }
}

} // namespace

int run_rollback(Context& ctx, const po::variables_map& vm)
{
    const bool dry_run = vm.count("dry-run") != 0U;
    if (!dry_run) {
        require_root(ctx, "rollback");
    }
    const apply::Journal journal(ctx.fs);
    if (journal.ids().empty()) {
        throw Error(Errc::not_found, "nothing to roll back: no generation was ever recorded under "
                                         + (ctx.fs.root() / std::string(apply::k_generations_dir).substr(1)).string());
    }
    std::optional<util::HostLock> lock;
    if (!dry_run) {
        auto l = journal.lock();
        if (!l) {
            throw l.error();
        }
        lock = std::move(*l);
    }
    // Crash recovery comes first.
    if (auto m = apply::find_interrupted(journal, dry_run ? apply::LockHeld::by_other_or_nobody : apply::LockHeld::by_us)) {
        return recover_interrupted(ctx, vm, journal, *m, dry_run);
    }

    std::optional<std::uint64_t> to;
    if (vm.count("to") != 0U) {
        to = vm["to"].as<std::uint64_t>();
    }
    const auto force = vm.count("force") != 0U ? apply::Force::yes : apply::Force::no;
    const auto remove_volumes = vm.count("remove-volumes") != 0U ? apply::RemoveVolumes::yes : apply::RemoveVolumes::no;
    const auto rb = apply::plan_rollback(journal, to, force, remove_volumes);
    print_rollback_plan(ctx, rb, to.has_value());
    if (dry_run) {
        std::printf("Dry run: nothing was written.\n");
        return exit_code::ok;
    }
    const auto report = apply::run_transaction(journal, ctx.runner, rb.spec, cli_progress(ctx), &libvirt_hooks());
    print_recorded_commands(ctx);
    std::printf("Rolled back as generation %llu: %zu file(s) restored.\n", static_cast<unsigned long long>(report.generation),
                report.written.size());
    for (const auto& k : rb.kept) {
        std::printf("kept: %s\n", k.c_str());
    }
    if (!report.written.empty()) {
        std::printf("note: reboot so the restored kernel command line and initramfs take effect\n");
    }
    return exit_code::ok;
}

} // namespace passthru::cli
