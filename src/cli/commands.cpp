// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/commands.hpp"

#include <cstdio>

#include "cli/global_words.hpp"

namespace passthru::cli {

const std::vector<Command>& commands()
{
    // A plain table, not self-registration: nothing can silently drop out.
    static const std::vector<Command> k_commands{
        {"scan", "list GPUs, IOMMU groups, drivers and what is wrong with the host", scan_options, run_scan},
        {"plan", "show every change passthrough needs on this host, each with its reason", plan_options, run_plan},
        {"apply", "make the planned changes (journaled, atomic); --dry-run shows the diffs", apply_options, run_apply, "FILE"},
        {"verify", "check after the reboot that the GPUs are ready for their VM", verify_options, run_verify},
        {"history", "list the recorded generations of changes", history_options, run_history},
        {"rollback", "restore the files of an earlier generation", rollback_options, run_rollback},
        {"confirm", "make a verified trial boot the default, or keep a network change applied with --confirm-timeout", confirm_options,
         run_confirm},
        {"explain", "say why a VM's last start failed after passthrough, and what to do", explain_options, run_explain, "VMID"},
        {"capture", "write the files passthru reads of this host to FILE (a tarball for --root), private data removed", capture_options,
         run_capture, "FILE"},
        {"kernel", "check every installed kernel (will passthrough work when it boots), pin the default kernel, boot one once",
         kernel_options, run_kernel, "check|pin|unpin|trial [KVER...]"},
        {"rom", "read a card's option ROM through sysfs, check it and save it to FILE (rom dump SLOT FILE)", rom_options, run_rom,
         "dump SLOT FILE"},
    };
    return k_commands;
}

void print_warning(const Context& ctx, std::string_view message)
{
    std::fprintf(stderr, "passthru: %s %s\n", util::styled("warning:", util::Style::yellow, ctx.color_err).c_str(),
                 with_global_words(message).c_str());
}

void print_note(const Context& ctx, std::string_view message)
{
    std::fprintf(stderr, "passthru: %s %s\n", util::styled("note:", util::Style::cyan, ctx.color_err).c_str(),
                 with_global_words(message).c_str());
}

} // namespace passthru::cli
