// SPDX-License-Identifier: GPL-2.0-or-later
// passthru rollback [--to N] [--force]: first undoes an interrupted
// generation if there is one (crash recovery); otherwise undoes the newest
// active generation, or with --to N every active generation from N on, as a
// new journaled generation of kind "rollback" (apply/rollback.hpp). Like
// apply it shows what it will restore and asks; without a terminal it needs
// --yes (exit 2 otherwise, nothing written). Nothing to undo is exit 0.
// --trial-fallback is what the trial's revert unit runs on a boot without
// the trial marker (plan/trial.hpp): it undoes the newest generation only
// when that is an unconfirmed trial, and refuses (exit 3) on the trial boot.
#include <cstdio>

#include "apply/journal.hpp"
#include "apply/network_guard.hpp"
#include "apply/pending.hpp"
#include "apply/rollback.hpp"
#include "apply/transaction.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "scan/boot_loader.hpp"
#include "util/signals.hpp"
#include "util/strings.hpp"

namespace passthru::cli {

void rollback_options(po::options_description& options)
{
    options.add_options()("to", po::value<std::uint64_t>()->value_name("N"),
                          "restore the host to how it was before generation N (undoes N and every later one)")(
        "force", "roll back even files that were changed by hand since they were applied (the edits are kept in the new generation; "
                 "in crash recovery, under the interrupted generation's kept/)")(
        "remove-volumes", "also delete the volumes the undone after-steps allocated (pvesm free); without it they are kept and named")(
        "dry-run", "show what would be restored and write nothing")(
        "trial-fallback", "undo the newest generation only if it is an unconfirmed trial (apply --trial), and only on a boot without "
                          "the trial marker: what the trial's revert unit runs on the default entry")(
        "yes,y", "do not ask for confirmation (needed when standard input is not a terminal)");
}

namespace {

// After a rollback (under the lock): what waited for the host as it was is
// stale, a network handshake of an apply that ended and the pending plan.
void forget_stale_records(const Context& ctx)
{
    apply::clear_stale_confirm(ctx.fs);
    if (auto cleared = apply::clear_pending(ctx.fs); !cleared) {
        print_warning(ctx, "could not remove the pending plan: " + std::string(cleared.error().what()));
    }
}

// Recovery's drift check, as rollback's: a file that is neither as it was
// before the interrupted generation nor as it wrote it was edited since;
// refused (Errc::conflict) unless --force, which keeps its content in the
// generation's directory first. Returns the drifted files.
std::vector<std::string> check_recovery_drift(const Context& ctx, const po::variables_map& vm, const apply::Journal& journal,
                                              const apply::Manifest& m)
{
    auto drifted = apply::recovery_drift(journal, m);
    if (drifted.empty()) {
        return drifted;
    }
    if (vm.count("force") == 0U) {
        Error err(Errc::conflict, std::to_string(drifted.size()) + " file(s) changed since generation " + std::to_string(m.id)
                                      + " was interrupted: " + util::join(drifted, ", "));
        err.with_hint("recovering would throw those edits away; look at them, then use --force to recover anyway (their current "
                      "content is kept under "
                      + (ctx.fs.root() / apply::Journal::kept_path(m.id, "").substr(1)).string() + ")");
        throw err;
    }
    for (const auto& d : drifted) {
        print_warning(ctx, d + " was changed since generation " + std::to_string(m.id) + " was interrupted; its current content is kept in "
                               + (ctx.fs.root() / apply::Journal::kept_path(m.id, d).substr(1)).string());
    }
    return drifted;
}

// Whether to go on after showing what will be restored: --yes, or the answer.
bool confirmed(const Context& ctx, const po::variables_map& vm)
{
    if (vm.count("yes") != 0U || ask_confirmation(ctx, "roll back", "Restore these files on")) {
        return true;
    }
    std::fprintf(stderr, "passthru: not rolled back; nothing was written\n");
    return false;
}

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
    const auto drifted = check_recovery_drift(ctx, vm, journal, m);
    for (auto it = m.files.rbegin(); it != m.files.rend(); ++it) {
        std::printf("  %s %s\n", it->before_sha256 ? "restore" : "remove ", it->path.c_str());
    }
    if (dry_run) {
        std::printf("Dry run: nothing was written.\n");
        return exit_code::ok;
    }
    if (!confirmed(ctx, vm)) {
        return exit_code::error;
    }
    apply::keep_drifted(journal, m, drifted);
    auto report = apply::restore_generation(journal, ctx.runner, m, cli_progress(ctx), &libvirt_hooks());
    print_recorded_commands(ctx);
    if (!report.failures.empty()) {
        throw apply::rollback_failed_error(m.id, "generation " + std::to_string(m.id) + " was interrupted", report);
    }
    forget_stale_records(ctx);
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

apply::RemoveVolumes remove_volumes_option(const po::variables_map& vm)
{
    return vm.count("remove-volumes") != 0U ? apply::RemoveVolumes::yes : apply::RemoveVolumes::no;
}

// Whether execute_rollback asks first: rollback does, unless --yes; the
// trial's revert unit (--trial-fallback) runs unattended and does not.
enum class Ask
{
    unless_yes,
    never,
};

// Prints the rollback, then (unless a dry run or not confirmed) runs it as one generation.
int execute_rollback(Context& ctx, const po::variables_map& vm, const apply::Journal& journal, const apply::RollbackPlan& rb, bool to_given,
                     bool dry_run, Ask ask)
{
    print_rollback_plan(ctx, rb, to_given);
    if (dry_run) {
        std::printf("Dry run: nothing was written.\n");
        return exit_code::ok;
    }
    if (ask == Ask::unless_yes && !confirmed(ctx, vm)) {
        return exit_code::error;
    }
    const auto report = apply::run_transaction(journal, ctx.runner, rb.spec, cli_progress(ctx), &libvirt_hooks());
    forget_stale_records(ctx);
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

// The journal's lock, taken for everything but a dry run (which writes nothing).
std::optional<apply::JournalLock> lock_unless_dry_run(const apply::Journal& journal, bool dry_run)
{
    if (dry_run) {
        return std::nullopt;
    }
    auto lock = journal.lock();
    if (!lock) {
        throw lock.error();
    }
    return std::move(*lock);
}

// rollback --trial-fallback: the revert unit's command on a boot without the
// trial marker. Refuses (exit 3, nothing written) on the trial boot, when
// /proc/cmdline cannot be read, when a generation was interrupted (rollback's
// crash recovery is left to the user), and when
// the newest applied generation is not an unconfirmed trial; changed files
// are refused as by rollback (exit 1; there is no --force here).
int trial_fallback(Context& ctx, const po::variables_map& vm, const apply::Journal& journal, bool dry_run)
{
    const std::string refused = "no trial fallback: ";
    const auto lock = lock_unless_dry_run(journal, dry_run);
    const util::SignalScope signals; // a rollback is never stopped half-way: it carries on to its end
    if (auto m = apply::find_interrupted(journal, dry_run ? apply::LockHeld::by_other_or_nobody : apply::LockHeld::by_us)) {
        throw Error(Errc::precondition, refused + "generation " + std::to_string(m->id) + " was interrupted")
            .with_hint("run 'passthru rollback': it restores that generation first; then 'passthru rollback' again undoes the trial");
    }
    auto cmdline = ctx.fs.read_file("/proc/cmdline");
    if (!cmdline) {
        throw Error(Errc::precondition,
                    refused + "cannot read /proc/cmdline to tell the trial boot from the others: " + std::string(cmdline.error().what()));
    }
    if (scan::is_trial_boot(*cmdline)) {
        throw Error(Errc::precondition, refused + "this is the trial boot (" + std::string(scan::k_trial_marker) + " on /proc/cmdline)")
            .with_hint("on the trial boot: 'passthru verify', then 'passthru confirm'; or 'passthru rollback'");
    }
    const auto trial = active_trial(journal);
    if (!trial) {
        const auto active = apply::active_generations(journal.load_all());
        throw Error(Errc::precondition, refused
                                            + (active.empty() ? std::string("no applied generation is active")
                                                              : "the newest applied generation, " + std::to_string(active.back().id)
                                                                    + ", is not an unconfirmed trial"))
            .with_hint("'passthru history' lists the generations; 'passthru rollback' undoes the newest one");
    }
    std::printf("Generation %llu is a trial that was not confirmed, and this boot is not its trial boot: restoring the host "
                "as it was before it.\n",
                static_cast<unsigned long long>(trial->id));
    const auto rb = apply::plan_rollback(journal, std::nullopt, apply::Force::no, remove_volumes_option(vm));
    if (rb.undoes != std::vector<std::uint64_t>{trial->id}) {
        throw Error(Errc::internal, "the rollback would not undo exactly trial generation " + std::to_string(trial->id));
    }
    return execute_rollback(ctx, vm, journal, rb, false, dry_run, Ask::never);
}

} // namespace

int run_rollback(Context& ctx, const po::variables_map& vm)
{
    const bool dry_run = vm.count("dry-run") != 0U;
    if (vm.count("trial-fallback") != 0U && (vm.count("to") != 0U || vm.count("force") != 0U)) {
        throw Error(Errc::usage, "--trial-fallback undoes exactly the unconfirmed trial: it takes neither --to nor --force");
    }
    if (!dry_run) {
        require_root(ctx, "rollback");
    }
    const apply::Journal journal(ctx.fs);
    if (vm.count("trial-fallback") != 0U) {
        return trial_fallback(ctx, vm, journal, dry_run);
    }
    // Nothing to undo is done already, as apply's "Nothing to do" (exit 0):
    // `rollback --yes` may run twice in a playbook.
    if (journal.ids().empty()) {
        std::printf("Nothing to roll back: no generation was ever recorded under %s.\n",
                    (ctx.fs.root() / std::string(apply::k_generations_dir).substr(1)).c_str());
        return exit_code::ok;
    }
    const auto lock = lock_unless_dry_run(journal, dry_run);
    const util::SignalScope signals; // a rollback is never stopped half-way: it carries on to its end
    // Crash recovery comes first.
    if (auto m = apply::find_interrupted(journal, dry_run ? apply::LockHeld::by_other_or_nobody : apply::LockHeld::by_us)) {
        return recover_interrupted(ctx, vm, journal, *m, dry_run);
    }

    std::optional<std::uint64_t> to;
    if (vm.count("to") != 0U) {
        to = vm["to"].as<std::uint64_t>();
    }
    if (!to && apply::active_generations(journal.load_all()).empty()) {
        std::printf("Nothing to roll back: no applied generation is active ('passthru%s history' lists them).\n", root_option(ctx).c_str());
        return exit_code::ok;
    }
    const auto force = vm.count("force") != 0U ? apply::Force::yes : apply::Force::no;
    const auto rb = apply::plan_rollback(journal, to, force, remove_volumes_option(vm));
    return execute_rollback(ctx, vm, journal, rb, to.has_value(), dry_run, Ask::unless_yes);
}

} // namespace passthru::cli
