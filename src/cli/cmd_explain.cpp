// SPDX-License-Identifier: GPL-2.0-or-later
// passthru explain VMID [--kernel-log FILE] [--json]: why the VM's (or the
// container's) most recent start failed, from its Proxmox VE task log and the kernel's log,
// matched against profiles/failures.json and tied to this host. Exit 0 when
// a known cause was found or there is no failed start, 1 when the start
// failed for a reason no known failure matches (the lines are shown), 2 for
// bad usage (src/cli/help.cpp: the text of the man page and --help).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "data/failures.hpp"
#include "explain/explain.hpp"
#include "format/kernel_log.hpp"
#include "scan/kernel_log.hpp"
#include "util/lex.hpp"
#include "util/local_file.hpp"

namespace passthru::cli {

void explain_options(po::options_description& options)
{
    options.add_options()("kernel-log", po::value<std::string>()->value_name("FILE"),
                          "a captured kernel log (dmesg, dmesg -x, journalctl -k) instead of the root's kern.log or /dev/kmsg")(
        "json", "print one JSON document (schema passthru.explain/1) and nothing else");
}

namespace {

constexpr std::string_view k_explain_schema = "passthru.explain/1";

std::uint64_t parse_vmid(const po::variables_map& vm)
{
    if (vm.count(k_operand_key) == 0U) {
        throw Error(Errc::usage, "explain needs the VMID of the VM that did not start").with_hint("e.g. passthru explain 101");
    }
    const std::string word = vm[k_operand_key].as<std::vector<std::string>>().front();
    // Proxmox VE's VMIDs: 100 to 999999999.
    if (word.size() > 9 || !util::lex::all_of(word, util::lex::is_digit) || word.front() == '0' || std::stoull(word) < 100) {
        throw Error(Errc::usage, "VMID '" + word.substr(0, 64) + "': must be a number from 100 to 999999999");
    }
    return std::stoull(word);
}

std::vector<explain::Signature> load_signatures(const data::DataDir& data)
{
    auto rows = data::load_failures(data, explain::pattern_captures);
    if (!rows) {
        throw rows.error();
    }
    return explain::signatures(*rows);
}

scan::KernelLog kernel_log(const Context& ctx, const po::variables_map& vm)
{
    if (vm.count("kernel-log") == 0U) {
        return scan::read_host_kernel_log(ctx.fs);
    }
    const std::string file = vm["kernel-log"].as<std::string>();
    auto text = util::read_local_file(file, util::HostFs::k_max_file_bytes);
    if (!text) {
        throw Error(Errc::usage, "--kernel-log " + file + ": " + text.error().what());
    }
    auto messages = format::kernel_log::kernel_messages(*text, "--kernel-log " + file);
    if (!messages) {
        throw messages.error();
    }
    return scan::KernelLog{"--kernel-log " + file, std::move(*messages), std::nullopt};
}

// "VM 101" or "container 105".
std::string guest_word(const explain::Report& r)
{
    return (r.guest == scan::GuestKind::container ? "container " : "VM ") + std::to_string(r.vmid);
}

nlohmann::json report_json(const explain::Report& r)
{
    nlohmann::json task = nullptr;
    if (r.task) {
        const auto& e = r.task->entry;
        task = {{"upid", e.upid.text},
                {"node", e.upid.node},
                {"start_time", e.upid.starttime},
                {"end_time", e.endtime ? nlohmann::json(*e.endtime) : nlohmann::json(nullptr)},
                {"status", e.endtime ? nlohmann::json(e.status) : nlohmann::json(nullptr)},
                {"failed", r.task->failed},
                {"log", r.task->log_path},
                {"log_found", r.task->log_found}};
    }
    nlohmann::json causes = nlohmann::json::array();
    for (const auto& c : r.causes) {
        causes.push_back({{"id", c.id},
                          {"where", explain::to_string(c.where)},
                          {"line", c.line},
                          {"cause", c.cause},
                          {"fix", c.fix},
                          {"command", c.command ? nlohmann::json(*c.command) : nlohmann::json(nullptr)},
                          {"source", c.source},
                          {"captures", c.captures}});
    }
    return {{"schema", k_explain_schema},
            {"vmid", r.vmid},
            {"guest", r.guest == scan::GuestKind::container ? "container" : "vm"},
            {"vm_name", r.vm_name ? nlohmann::json(*r.vm_name) : nlohmann::json(nullptr)},
            {"vm_functions", r.vm_functions},
            {"verdict", explain::to_string(r.verdict)},
            {"task", task},
            {"kernel_log", {{"source", r.kernel_source}, {"messages", r.kernel_messages}}},
            {"causes", causes},
            {"unplaced", r.unplaced},
            {"notes", r.notes}};
}

void print_human(const Context& ctx, const explain::Report& r)
{
    const std::string vm = guest_word(r) + (r.vm_name ? " (" + *r.vm_name + ")" : "");
    if (!r.task) {
        std::printf("%s: no start task recorded in %s (index, active)\n", vm.c_str(), explain::k_task_dir.data());
    } else {
        const auto& e = r.task->entry;
        const std::string state = !e.endtime ? "still running" : (r.task->failed ? "failed: " + e.status : "succeeded (" + e.status + ")");
        std::printf("Explaining %s's last start: %s\n  task %s\n  log  %s%s\n", vm.c_str(), state.c_str(), e.upid.text.c_str(),
                    r.task->log_path.c_str(), r.task->log_found ? "" : " (missing)");
    }
    if (!r.kernel_source.empty()) {
        std::printf("  kernel log %s: %zu message(s)\n", r.kernel_source.c_str(), r.kernel_messages);
    }
    for (const auto& n : r.notes) {
        std::printf("  %s %s\n", util::styled("note", util::Style::yellow, ctx.color_out).c_str(), n.c_str());
    }
    for (const auto& c : r.causes) {
        std::printf("  %s %s (%s)\n", util::styled("CAUSE", util::Style::red, ctx.color_out).c_str(), c.id.c_str(),
                    explain::to_string(c.where).data());
        std::printf("        line:   %s\n        cause:  %s\n        fix:    %s\n", c.line.c_str(), c.cause.c_str(), c.fix.c_str());
        if (c.command) {
            std::printf("        run:    %s\n", c.command->c_str());
        }
        std::printf("        source: %s\n", c.source.c_str());
    }
    for (const auto& line : r.unplaced) {
        std::printf("  %s %s\n", util::styled("not placed", util::Style::yellow, ctx.color_out).c_str(), line.c_str());
    }
}

} // namespace

int run_explain(Context& ctx, const po::variables_map& vm)
{
    const std::uint64_t vmid = parse_vmid(vm);
    const data::DataDir data(ctx.fs, ctx.global.data_dir);
    const auto signatures = load_signatures(data);
    auto kernel = kernel_log(ctx, vm);
    const scan::Inventory inventory = scan_with_data(ctx, data);
    const auto report = explain::explain_start(explain::ExplainInput{ctx.fs, inventory, vmid, signatures, std::move(kernel)});
    if (vm.count("json") != 0U) {
        // A log's bytes that are not UTF-8 become U+FFFD: the document stays JSON.
        std::printf("%s\n", report_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
        print_human(ctx, report);
    }
    switch (report.verdict) {
    case explain::Verdict::explained:
        if (vm.count("json") == 0U) {
            std::printf("%zu known cause(s) found; the fixes are above.\n", report.causes.size());
        }
        return exit_code::ok;
    case explain::Verdict::unexplained:
        std::fprintf(stderr, "passthru: error: %s's start failed for a reason passthru does not know; the lines above are the log\n",
                     guest_word(report).c_str());
        return exit_code::error;
    case explain::Verdict::no_failure:
        if (vm.count("json") == 0U) {
            std::printf("Nothing to explain: %s has no failed start.\n", guest_word(report).c_str());
        }
        return exit_code::ok;
    }
    return exit_code::internal;
}

} // namespace passthru::cli
