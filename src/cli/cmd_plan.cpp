// SPDX-License-Identifier: GPL-2.0-or-later
// passthru plan: every change passthrough needs on this host, each with its
// reason. Writes nothing to the host; --out writes the JSON plan to a file on
// this machine (not under --root), or to stdout for --out -.
#include <cstdio>
#include <optional>

#include <unistd.h>

#include "apply/journal.hpp"
#include "apply/pending.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "cli/plan_render.hpp"
#include "cli/request_options.hpp"
#include "cli/root_guard.hpp"
#include "plan/plan_json.hpp"
#include "plan/planner.hpp"
#include "scan/scanner.hpp"
#include "util/host_fs.hpp"

namespace passthru::cli {

namespace {

// The saved plan carries whole host files (a VM config's cipassword, say):
// only its owner may read it.
void write_plan_file(const std::string& path, const std::string& text)
{
    if (path.empty()) {
        throw Error(Errc::usage, "--out needs a file name");
    }
    if (auto saved = util::save_local_file(path, text, 0600); !saved) {
        throw Error(saved.error().code(), "--out " + std::string(saved.error().what()));
    }
}

// `--out -`: the plan goes to standard output, not to a file named "-".
bool out_is_stdout(const po::variables_map& vm)
{
    return vm.count("out") != 0U && vm["out"].as<std::string>() == "-";
}

// Records the plan as the host's pending plan, for `apply --dry-run` and
// `apply` without a request. Never fails the plan: a plan that cannot be
// recorded is still a plan, and the note says why. Whether it was recorded.
bool record_pending(const Context& ctx, const nlohmann::json& doc)
{
    if (ctx.fs.is_live() && ::geteuid() != 0) {
        print_note(ctx, "not recorded as the pending plan: only root may write " + std::string(apply::k_pending_plan)
                            + " (run plan as root, or save it with --out FILE)");
        return false;
    }
    if (auto why = unwritable_root(ctx)) {
        print_note(ctx, "not recorded as the pending plan: " + *why + "; " + copy_root_hint(ctx));
        return false;
    }
    // Under the journal's lock, as apply deletes it: a plan during an apply
    // must not report a pending plan that the apply then removes.
    const apply::Journal journal(ctx.fs);
    auto lock = journal.lock();
    if (!lock) {
        print_note(ctx, "not recorded as the pending plan: " + std::string(lock.error().what()));
        return false;
    }
    if (auto r = apply::save_pending(ctx.fs, doc); !r) {
        print_note(ctx, "not recorded as the pending plan: " + std::string(r.error().what()));
        return false;
    }
    return true;
}

} // namespace

void plan_options(po::options_description& options)
{
    add_request_options(options);
    options.add_options()("json", "print the plan as one JSON document (schema passthru.plan/1) and nothing else")(
        "out", po::value<std::string>()->value_name("FILE"),
        "also save the JSON plan to FILE on this machine (for 'passthru apply --plan FILE'); only a regular file is replaced; "
        "- writes it to standard output instead of the human plan")("exit-code",
                                                                    "exit 10 when changes are pending (0 when nothing is to do)")(
        "verbose", "show every note in full (the human plan shortens a note over about 200 characters; --json has them in full)");
}

// The plan as JSON text; nullopt when a string in it is not UTF-8.
std::optional<std::string> plan_json_text(const nlohmann::json& doc)
{
    try {
        return doc.dump(2) + "\n";
    } catch (const nlohmann::json::type_error&) {
        return std::nullopt;
    }
}

int run_plan(Context& ctx, const po::variables_map& vm)
{
    // make_plan checks what the request must contain (--vm and --gpus, or a
    // network-only request).
    const plan::Request request = parse_request(vm);
    const data::DataDir data(ctx.fs, ctx.global.data_dir);
    const scan::Inventory inventory = scan_with_data(ctx, data);
    auto result = plan::make_plan(inventory, ctx.fs, data, in_session(ctx, request));
    if (!result) {
        throw result.error();
    }
    const plan::Plan& p = *result;
    const auto doc = plan::plan_to_json(p);
    // A plan carries whole file contents; one that is not UTF-8 cannot be a
    // JSON string without changing its bytes: --json and --out say so (one
    // passthru.error/1 document, exit 1) instead of a plan that would write
    // other bytes; the human plan shows such bytes escaped and is not
    // recorded as the pending plan.
    const std::optional<std::string> text = plan_json_text(doc);
    const bool to_stdout = out_is_stdout(vm); // --out -: the JSON plan on stdout, as --json
    const bool json = vm.count("json") != 0U || to_stdout;
    if (!text && (json || vm.count("out") != 0U)) {
        throw Error(Errc::parse, "cannot write the plan as JSON: a file holds bytes that are not UTF-8")
            .with_hint("use the human plan (without --json/--out), or convert that file to UTF-8");
    }
    // With --out (also --out -) the plan is not recorded as the pending plan.
    const bool out = vm.count("out") != 0U;
    PlanSource source = PlanSource::request;
    if (out && !to_stdout) {
        if (p.refused()) {
            print_note(ctx, "the plan is refused: --out " + vm["out"].as<std::string>() + " was not written");
        } else {
            write_plan_file(vm["out"].as<std::string>(), *text);
            source = PlanSource::saved;
        }
    } else if (!out && !p.refused() && !p.empty()) {
        if (text) {
            source = record_pending(ctx, doc) ? PlanSource::pending : PlanSource::request;
        } else {
            print_note(ctx, "not recorded as the pending plan: a file holds bytes that are not UTF-8 (JSON cannot carry them)");
        }
    }
    if (json) {
        std::fputs(text->c_str(), stdout);
    } else {
        std::fputs(render_plan(p, RenderOptions{ctx.color_out, true, vm.count("verbose") != 0U}).c_str(), stdout);
        // The next step comes last, after the plan it applies.
        if (!p.refused() && !p.empty()) {
            std::fputs(apply_step(p, source, out ? vm["out"].as<std::string>() : std::string()).c_str(), stdout);
        }
    }
    if (p.refused()) {
        std::fprintf(stderr, "passthru: error: refused: %s\n", p.refusals.front().message.c_str());
        if (p.refusals.size() > 1) {
            std::fprintf(stderr, "passthru: note: %zu more refusal(s) in the plan\n", p.refusals.size() - 1);
        }
        return exit_code::refused;
    }
    if (vm.count("exit-code") != 0U && !p.empty()) {
        return exit_code::pending;
    }
    return exit_code::ok;
}

} // namespace passthru::cli
