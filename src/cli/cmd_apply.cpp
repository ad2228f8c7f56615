// SPDX-License-Identifier: GPL-2.0-or-later
// passthru apply: make the planned changes as one journaled transaction
// (apply/transaction.hpp). --dry-run prints exactly what `plan` prints and
// writes nothing at all (no journal, no lock). With --plan FILE (or the one
// word FILE, the same) it applies a plan saved by `plan --out`, refusing
// (exit 1, "replan") when any target file changed since; with the request
// options it plans afresh; with neither it applies the pending plan.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apply/journal.hpp"
#include "apply/network_guard.hpp"
#include "apply/pending.hpp"
#include "apply/rollback.hpp"
#include "apply/transaction.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "cli/help.hpp"
#include "cli/plan_render.hpp"
#include "cli/request_options.hpp"
#include "plan/after_step.hpp"
#include "plan/plan_json.hpp"
#include "plan/planner.hpp"
#include "plan/request.hpp"
#include "plan/saved_plan.hpp"
#include "plan/trial.hpp"
#include "scan/scanner.hpp"
#include "util/json.hpp"
#include "util/local_file.hpp"
#include "util/sha256.hpp"
#include "util/signals.hpp"
#include "util/strings.hpp"

namespace passthru::cli {

namespace {

// Far more than any plan passthru writes (a few KiB): a larger file is no plan.
constexpr std::size_t k_max_saved_plan = std::size_t{16} << 20;

// The saved plan's text. It lives on this machine (plan --out), not under
// --root. Only a regular file is a saved plan: the open never waits (a FIFO
// would block forever) and a device is refused (/dev/zero never ends), as is
// a file larger than k_max_saved_plan.
std::string read_saved_plan_file(const std::string& file)
{
    auto text = util::read_local_file(file, k_max_saved_plan);
    if (!text) {
        const std::string why = text.error().what();
        throw Error(Errc::usage, "--plan " + file + ": " + why + (why.rfind("larger", 0) == 0 ? ", no plan passthru wrote" : ""))
            .with_hint("save a plan with 'passthru plan ... --out FILE'");
    }
    return std::move(*text);
}

plan::Plan load_saved_plan(const std::string& file)
{
    auto doc = util::parse_json(read_saved_plan_file(file), "--plan " + file, Errc::usage);
    if (!doc) {
        throw Error(doc.error());
    }
    auto p = plan::plan_from_json(*doc);
    if (!p) {
        throw Error(Errc::usage, "--plan " + file + ": " + p.error().what());
    }
    return std::move(*p);
}

// A saved plan is only valid for the files it was made from (terraform's
// saved-plan rule): every before_sha256 must still match.
void check_not_stale(const Context& ctx, const plan::Plan& p, const std::string& file, const std::string& replan_hint)
{
    std::vector<std::string> changed;
    for (const auto& f : p.files) {
        const auto info = ctx.fs.stat(f.path);
        std::optional<std::string> sha;
        if (info.type == util::FileType::regular) {
            auto text = ctx.fs.read_file(f.path);
            if (text) {
                sha = util::sha256_hex(*text);
            }
        } else if (info.type != util::FileType::missing) {
            sha = "not a regular file";
        }
        std::optional<std::string> want = f.before_sha256;
        if (!want && f.before) {
            want = util::sha256_hex(*f.before);
        }
        if (sha != want) {
            changed.push_back(f.path);
        }
    }
    if (!changed.empty()) {
        throw Error(Errc::conflict, file + " is stale: " + util::join(changed, ", ") + " changed since it was made").with_hint(replan_hint);
    }
}

// A saved plan is applied only when it is exactly what passthru plans for
// its recorded request on this host now (plan/saved_plan.hpp): nothing in the
// file is trusted beyond what passthru itself would write and run.
void check_rederived(Context& ctx, const plan::Plan& saved, const std::string& what, const std::string& replan_hint)
{
    const data::DataDir data(ctx.fs, ctx.global.data_dir);
    const scan::Inventory inventory = scan_with_data(ctx, data);
    auto derived = plan::make_plan(inventory, ctx.fs, data, in_session(ctx, saved.request));
    if (!derived) {
        throw Error(Errc::precondition, "refused: " + what + " cannot be planned again on this host: " + derived.error().what())
            .with_hint(replan_hint);
    }
    const auto diffs = plan::saved_plan_differences(saved, *derived);
    if (diffs.empty()) {
        return;
    }
    const std::string more = diffs.size() > 1 ? " (and " + std::to_string(diffs.size() - 1) + " more)" : "";
    throw Error(Errc::precondition,
                "refused: " + what + " is not what passthru plans for its request on this host now: " + diffs.front() + more)
        .with_hint("a saved plan is applied only as passthru would make it; it was edited, or the host changed since it was made")
        .with_hint(replan_hint);
}

// Under --root after-steps are only recorded, so the host never shows their
// effect and the same request plans them again: when they are all the plan
// has left and an active generation recorded them, applying is a no-op.
bool only_recorded_steps_left(const Context& ctx, const apply::Journal& journal, const plan::Plan& p, bool dry_run)
{
    if (!p.files.empty() || !p.domains.empty()) {
        return false;
    }
    const auto gen = apply::steps_already_recorded(journal.load_all(), p.commands);
    if (!gen) {
        return false;
    }
    const std::string text = "Nothing to do: the only work left is " + std::to_string(p.commands.size()) + " after-step(s) that generation "
                             + std::to_string(*gen)
                             + " already recorded (commands are recorded, not run, under --root); no generation created.";
    if (dry_run) {
        print_note(ctx, text); // stderr, so that stdout stays byte for byte what `plan` printed
    } else {
        std::printf("%s\n", text.c_str());
    }
    return true;
}

// The plan to apply and how to name it when it has gone stale.
struct PlanToApply
{
    plan::Plan plan;
    bool from_saved = false; // a saved or the pending plan (checked for staleness)
    bool pending = false;    // the pending plan that `passthru plan` recorded
    PlanSource source = PlanSource::request;
    std::string saved_file; // with PlanSource::saved
    std::string stale_what;
    std::string replan_hint;
};

PlanToApply pending_plan(const Context& ctx, Result<std::optional<apply::PendingPlan>>& pending)
{
    if (!pending) {
        // a refusal (a document nested too deep) stays one (exit 3)
        const Errc code = pending.error().code() == Errc::precondition ? Errc::precondition : Errc::usage;
        throw Error(code, "the pending plan cannot be read: " + std::string(pending.error().what()))
            .with_hint("run 'passthru plan --vm VMID --gpus SEL' again to record a new one");
    }
    if (!*pending) {
        throw Error(
            Errc::usage,
            "there is no pending plan: run 'passthru plan' first, or give the request (--vm and --gpus) or a saved plan (--plan FILE)")
            .with_hint("e.g. passthru" + root_option(ctx) + " plan --vm 101 --gpus all, then passthru" + root_option(ctx)
                       + " apply --dry-run");
    }
    PlanToApply out;
    out.plan = std::move((*pending)->plan);
    out.from_saved = true;
    out.pending = true;
    out.source = PlanSource::pending;
    out.stale_what = "the pending plan";
    out.replan_hint =
        "plan again: passthru" + root_option(ctx) + " plan " + request_to_options(out.plan.request) + ", review it, then apply it";
    print_note(ctx, "applying the pending plan made " + apply::age_text((*pending)->created_epoch) + " ago: passthru plan "
                        + request_to_options(out.plan.request));
    return out;
}

PlanToApply fresh_plan(Context& ctx, const po::variables_map& vm, const Result<std::optional<apply::PendingPlan>>& pending)
{
    plan::Request request = parse_request(vm);
    if (vm.count("trial") != 0U) {
        request.trial_minutes = vm.count("trial-minutes") != 0U ? vm["trial-minutes"].as<int>() : plan::k_trial_default_minutes;
        if (auto valid = plan::validate_request(request); !valid) {
            throw valid.error();
        }
    }
    // The requests plan takes: cards for a VM, a container or a cluster mapping, or the
    // bond/bridge alone.
    const bool network_only =
        request.vm.empty() && request.gpus.empty() && request.network && request.node_scans.empty() && request.containers.empty();
    if (!network_only && ((request.vm.empty() && request.node_scans.empty()) || request.gpus.empty()) && request.containers.empty()) {
        throw Error(Errc::usage, "give the request (--vm and --gpus, --ct and --gpus, or --bond alone) or a saved plan (--plan FILE)")
            .with_hint("e.g. passthru apply --vm 101 --gpus all --dry-run");
    }
    if (pending && *pending && plan::request_to_json((*pending)->plan.request) != plan::request_to_json(request)) {
        print_note(ctx, "the pending plan (passthru plan " + request_to_options((*pending)->plan.request)
                            + ") differs from this request: applying the request given here");
    }
    const data::DataDir data(ctx.fs, ctx.global.data_dir);
    const scan::Inventory inventory = scan_with_data(ctx, data);
    auto made = plan::make_plan(inventory, ctx.fs, data, in_session(ctx, request));
    if (!made) {
        throw made.error();
    }
    PlanToApply out;
    out.plan = std::move(*made);
    // The request of the pending plan: its next step is `apply` alone, as plan printed.
    if (pending && *pending && plan::request_to_json((*pending)->plan.request) == plan::request_to_json(request)) {
        out.source = PlanSource::pending;
    }
    return out;
}

// The saved plan named on the command line: --plan FILE, or the one word
// FILE, which means exactly the same (and is checked the same); never both.
std::optional<std::string> saved_plan_file(const po::variables_map& vm)
{
    const bool has_word = vm.count(k_operand_key) != 0U;
    if (has_word && vm.count("plan") != 0U) {
        throw Error(Errc::usage,
                    "apply: '" + vm[k_operand_key].as<std::vector<std::string>>().front()
                        + "' and --plan both name a saved plan (apply FILE is apply --plan FILE); usage: " + usage_line("apply"));
    }
    if (has_word) {
        return vm[k_operand_key].as<std::vector<std::string>>().front();
    }
    if (vm.count("plan") != 0U) {
        return vm["plan"].as<std::string>();
    }
    return std::nullopt;
}

// The plan from the saved plan FILE, from the request options, or the pending one.
PlanToApply plan_to_apply(Context& ctx, const po::variables_map& vm, const std::optional<std::string>& saved_file)
{
    auto pending = apply::load_pending(ctx.fs);
    if (saved_file) {
        const std::string& plan_file = *saved_file;
        PlanToApply out;
        out.plan = load_saved_plan(plan_file);
        out.from_saved = true;
        out.source = PlanSource::saved;
        out.saved_file = plan_file;
        out.stale_what = "the saved plan " + plan_file;
        out.replan_hint = "replan: run 'passthru plan ... --out " + plan_file + "' again, review it, then apply it";
        return out;
    }
    if (!has_request_options(vm)) {
        return pending_plan(ctx, pending);
    }
    return fresh_plan(ctx, vm, pending);
}

// The lock-out guard: after `ifreload -a`, wait for `passthru confirm` from
// a new connection; without it the guard puts the network files back, and
// the error undoes the rest of the transaction.
std::function<Result<void>()> network_guard_step(Context& ctx, const plan::Plan& p)
{
    const auto guard_spec = apply::network_guard_spec(p);
    const auto timeout = std::chrono::seconds(*p.request.network->confirm_timeout_seconds);
    return [&ctx, guard_spec, timeout]() -> Result<void> {
        apply::GuardHooks hooks;
        hooks.message = [&ctx](std::string_view text) { print_note(ctx, text); };
        hooks.detached_restorer = true;
        apply::NetworkGuardSpec s = guard_spec;
        s.ssh_connection = ctx.ssh_connection;
        auto outcome = apply::run_network_guard(ctx.fs, ctx.runner, s, timeout, hooks);
        if (!outcome) {
            return tl::unexpected(outcome.error());
        }
        if (*outcome == apply::GuardOutcome::restored && util::received_signal() != 0) {
            return fail(Errc::io, "interrupted by " + util::signal_name(util::received_signal())
                                      + " while the network change waited for confirmation");
        }
        if (*outcome == apply::GuardOutcome::restored) {
            return fail(Errc::io, "the network change was not confirmed within " + std::to_string(timeout.count()) + " s");
        }
        return {};
    };
}

// What to do after apply, in the order it must be done.
void print_next_steps(const Context& ctx, const plan::Plan& p)
{
    const bool boots =
        std::any_of(p.commands.begin(), p.commands.end(), [](const plan::PlannedCommand& c) { return plan::is_boot_refresh_step(c.argv); });
    if (!boots) {
        return;
    }
    const std::string root = root_option(ctx);
    if (p.request.kernel && p.request.kernel->action != plan::KernelAction::trial) {
        std::printf("Next steps:\n  1. reboot: the boot loader starts %s by default\n  2. to undo: passthru%s rollback\n",
                    p.request.kernel->action == plan::KernelAction::pin ? ("kernel " + p.request.kernel->release).c_str()
                                                                        : "its own choice of kernel (the newest)",
                    root.c_str());
        return;
    }
    const std::string verify = "passthru" + root + " verify" + (p.request.vm.empty() ? "" : " --vm " + p.request.vm);
    std::printf("Next steps, in this order:\n");
    if (p.request.trial_minutes) {
        std::printf("  1. reboot: %s\n", plan::trial_reboot_step(p).c_str());
        std::printf("  2. %s\n", verify.c_str());
        std::printf("  3. passthru%s confirm: makes the trial configuration the default, within %d min of the trial boot;\n", root.c_str(),
                    *p.request.trial_minutes);
        std::printf("     otherwise the watchdog reboots into the unchanged default entry (a hang needs a reset: BMC or watchdog),\n");
        std::printf("     where %s puts back the files from before the trial by itself\n", plan::k_trial_revert_unit.data());
        std::printf("     or passthru%s rollback, then reboot: back to the configuration before the trial\n", root.c_str());
        return;
    }
    std::printf("  1. reboot\n");
    std::printf("  2. %s\n", verify.c_str());
    std::printf("  3. if verify fails: passthru%s rollback, then reboot\n", root.c_str());
}

} // namespace

// Under the journal's lock: the transaction, then what was done and how to undo it.
int commit_plan(Context& ctx, const apply::Journal& journal, const plan::Plan& p)
{
    // From here a signal that ends a process is answered by the transaction
    // (util/signals.hpp): SIGHUP lets it finish, the others undo it.
    const util::SignalScope signals;
    auto lock = journal.lock();
    if (!lock) {
        throw lock.error();
    }
    // Checked again under the lock: another passthru may have just died.
    if (auto m = apply::find_interrupted(journal, apply::LockHeld::by_us)) {
        throw Error(Errc::precondition, "generation " + std::to_string(m->id) + " was interrupted and may have left the host half-changed")
            .with_hint("run 'passthru rollback' to restore it first, then plan again");
    }
    apply::TransactionSpec spec = apply::spec_from_plan(p);
    if (apply::network_guard_wanted(p)) {
        spec.before_commit = network_guard_step(ctx, p);
    }
    const auto report = apply::run_transaction(journal, ctx.runner, spec, cli_progress(ctx), &libvirt_hooks());
    // Applied: whatever was pending was planned against the host as it was.
    if (auto cleared = apply::clear_pending(ctx.fs); !cleared) {
        print_warning(ctx, "could not remove the pending plan: " + std::string(cleared.error().what()));
    }
    print_recorded_commands(ctx);
    std::printf("Applied as generation %llu: %zu file(s) written, %zu after-step(s) %s.\n",
                static_cast<unsigned long long>(report.generation), report.written.size(), report.commands.size(),
                ctx.runner.mode() == util::RunMode::record ? "recorded" : "run");
    // The plan's notes were shown with the plan, above: not again here.
    std::printf("Undo with: passthru%s rollback\n", root_option(ctx).c_str());
    print_next_steps(ctx, p);
    return exit_code::ok;
}

void apply_options(po::options_description& options)
{
    add_request_options(options);
    options.add_options()("plan", po::value<std::string>()->value_name("FILE"),
                          "apply the plan saved by 'passthru plan --out FILE' (refused if the host changed since)")(
        "dry-run", "show the diffs and commands, as 'plan' does, and write nothing")(
        "trial", "GRUB: boot the new configuration once, from a separate menu entry; the default entry stays as it is until "
                 "'passthru confirm'")("trial-minutes", po::value<int>()->value_name("MIN"),
                                       "with --trial: reboot into the default entry this many minutes after the trial boot unless "
                                       "confirmed (default 10)")(
        "yes,y", "do not ask for confirmation (needed when standard input is not a terminal)")(
        "verbose", "show every note of the plan in full (as plan --verbose)");
}

int run_apply(Context& ctx, const po::variables_map& vm)
{
    const bool dry_run = vm.count("dry-run") != 0U;
    const std::optional<std::string> saved_file = saved_plan_file(vm);
    if (saved_file && has_request_options(vm)) {
        throw Error(Errc::usage, "apply: the saved plan '" + *saved_file
                                     + "' and the request options (--vm, --gpus, ...) exclude each other, the saved plan holds its "
                                       "request; usage: "
                                     + usage_line("apply"));
    }
    if (!dry_run) {
        require_root(ctx, "apply");
    }
    if ((vm.count("trial") != 0U || vm.count("trial-minutes") != 0U) && !has_request_options(vm)) {
        throw Error(Errc::usage, "--trial needs the request (--vm and --gpus): a saved or pending plan was made without it")
            .with_hint("e.g. passthru apply --trial --vm 101 --gpus all");
    }
    if (vm.count("trial-minutes") != 0U && vm.count("trial") == 0U) {
        throw Error(Errc::usage, "--trial-minutes only goes with --trial");
    }

    const apply::Journal journal(ctx.fs);
    refuse_unfinished(ctx, journal, dry_run, "apply again");

    const PlanToApply chosen = plan_to_apply(ctx, vm, saved_file);
    const plan::Plan& p = chosen.plan;
    // A saved or pending plan is checked before anything of it is shown:
    // the diffs of a tampered plan are not passthru's to print.
    if (chosen.from_saved && !p.refused()) {
        check_not_stale(ctx, p, chosen.stale_what, chosen.replan_hint);
        check_rederived(ctx, p, chosen.stale_what, chosen.replan_hint);
    }
    // Exactly what `plan` prints.
    std::fputs(render_plan(p, RenderOptions{ctx.color_out, true, vm.count("verbose") != 0U}).c_str(), stdout);
    std::fflush(stdout);
    if (p.refused()) {
        std::fprintf(stderr, "passthru: error: refused: %s\n", p.refusals.front().message.c_str());
        return exit_code::refused;
    }
    if (p.empty()) {
        std::printf("Nothing to do: the host already matches the plan (no generation created).\n");
        return exit_code::ok;
    }
    if (dry_run) {
        // Byte for byte what `plan` printed, its last line included.
        std::fputs(apply_step(p, chosen.source, chosen.saved_file).c_str(), stdout);
    }
    if (only_recorded_steps_left(ctx, journal, p, dry_run)) {
        if (!dry_run && chosen.pending) {
            (void)apply::clear_pending(ctx.fs);
        }
        return exit_code::ok;
    }
    if (dry_run) {
        // stderr, so that stdout is byte for byte what `plan` printed.
        print_note(ctx, "dry run: nothing was written");
        return exit_code::ok;
    }
    if (vm.count("yes") == 0U && !ask_confirmation(ctx, "apply", "Apply these changes to")) {
        std::fprintf(stderr, "passthru: not applied; nothing was written\n");
        return exit_code::error;
    }
    return commit_plan(ctx, journal, p);
}

} // namespace passthru::cli
