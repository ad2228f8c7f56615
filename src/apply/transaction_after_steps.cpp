// SPDX-License-Identifier: GPL-2.0-or-later
// The after-steps of a transaction: each run and journaled with what it
// allocated and how it ended, the files as they left them, and what a restore
// re-runs or keeps of them.
#include <array>
#include <chrono>
#include <cstdio>

#include "apply/transaction.hpp"
#include "apply/transaction_detail.hpp"
#include "format/pve_config.hpp"
#include "plan/after_step.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"

namespace passthru::apply {

namespace {

// The value of a VM config key naming a volume ("local:101/vm-101-disk-0.raw").
std::optional<std::string> config_volume(const util::HostFs& fs, const plan::StepCreates& c)
{
    auto text = fs.read_file(c.config_path);
    if (!text) {
        return std::nullopt;
    }
    const auto value = format::pve::VmConfig::parse(*text).get(c.config_key);
    if (!value) {
        return std::nullopt;
    }
    return format::pve::PropertyString::parse(*value).get("");
}

} // namespace

namespace detail {

// Runs an after-step and, when it really ran (not only recorded under --root),
// says how long it took: update-initramfs takes minutes on a big host.
Result<util::CommandResult> run_timed(util::CommandRunner& runner, const std::vector<std::string>& argv, const Progress& progress,
                                      const std::string& prefix)
{
    const auto started = std::chrono::steady_clock::now();
    auto result = runner.run(argv);
    if (result && runner.mode() != util::RunMode::record) {
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
        std::array<char, 32> secs{};
        std::snprintf(secs.data(), secs.size(), "%.1f", took.count());
        emit(progress, prefix + "took " + secs.data() + " s: " + util::shell_quote(argv));
    }
    return result;
}

// Runs after-step i and records its outcome: status, exit code, what it
// allocated, and on failure its last output lines.
void run_after_step(const util::HostFs& fs, util::CommandRunner& runner, std::vector<JournalCommand>& commands, std::size_t i,
                    const Progress& progress)
{
    auto& cmd = commands[i];
    const std::string which = "after-step " + std::to_string(i + 1) + "/" + std::to_string(commands.size());
    emit(progress, "[" + std::to_string(i + 1) + "/" + std::to_string(commands.size()) + "] " + util::shell_quote(cmd.argv));
    const auto creates = plan::after_step_effects(cmd.argv).creates;
    std::vector<std::optional<std::string>> before;
    before.reserve(creates.size());
    for (const auto& c : creates) {
        before.push_back(config_volume(fs, c));
    }
    auto result = run_timed(runner, cmd.argv, progress, "[" + std::to_string(i + 1) + "/" + std::to_string(commands.size()) + "] ");
    if (!result) {
        cmd.status = CommandStatus::failed;
        Error err(result.error().code(), which + " " + util::shell_quote(cmd.argv) + " failed: " + result.error().what());
        throw err;
    }
    cmd.exit_code = result->exit_code;
    cmd.status = runner.mode() == util::RunMode::record ? CommandStatus::recorded : CommandStatus::ran;
    if (runner.mode() != util::RunMode::record) {
        for (std::size_t k = 0; k < creates.size(); ++k) {
            auto now = config_volume(fs, creates[k]);
            if (now && now != before[k]) {
                cmd.created.push_back(JournalResource{creates[k].kind, *now, creates[k].vm, creates[k].config_key});
            }
        }
    }
    if (result->exit_code != 0) {
        cmd.status = CommandStatus::failed;
        Error err(Errc::io, which + " " + util::shell_quote(cmd.argv) + " failed with exit code " + std::to_string(result->exit_code));
        auto lines = util::split_lines(result->output);
        const std::size_t from = lines.size() > 5 ? lines.size() - 5 : 0;
        for (std::size_t l = from; l < lines.size(); ++l) {
            err.with_hint("output: " + lines[l]);
            cmd.output.push_back(lines[l]);
        }
        throw err;
    }
}

// The generation records each journaled file as it is after the
// after-steps ran (qm rewrites the VM config it edits), so a later rollback
// compares against what is really on disk.
void record_after_state(const util::HostFs& fs, Manifest& m)
{
    for (auto& f : m.files) {
        const auto info = fs.stat(f.path);
        if (info.type == util::FileType::missing) {
            f.after_sha256 = std::nullopt;
        } else if (info.type == util::FileType::regular) {
            auto text = fs.read_file(f.path);
            if (text) {
                f.after_sha256 = util::sha256_hex(*text);
            }
        }
    }
}

} // namespace detail

bool rerun_after_restore(const std::vector<std::string>& argv)
{
    return !argv.empty() && plan::after_step_effects(argv).undo == plan::StepUndo::rerun;
}

namespace {

std::string volume_text(const JournalResource& r, const JournalCommand& by)
{
    return "volume " + r.id + " (VM " + r.vm + "'s " + r.config_key + ", allocated by " + util::shell_quote(by.argv) + ")";
}

} // namespace

namespace detail {

std::vector<std::string> kept_resources(const JournalCommand& cmd)
{
    std::vector<std::string> out;
    out.reserve(cmd.created.size());
    for (const auto& r : cmd.created) {
        out.push_back(volume_text(r, cmd)
                      + " is kept and no longer in the VM config; remove it with: " + util::shell_quote(plan::free_volume_argv(r.id)));
    }
    return out;
}

} // namespace detail

} // namespace passthru::apply
