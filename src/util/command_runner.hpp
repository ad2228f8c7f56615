// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace passthru::util {

enum class RunMode
{
    record,  // under --root: remember the command, run nothing
    execute, // live host: run it
};

struct CommandResult
{
    int exit_code = 0;
    std::string output; // stdout and stderr interleaved
};

// The second seam to the host (after HostFs): every external command passthru
// runs (update-initramfs, update-grub, proxmox-boot-tool, qm, ifreload) goes
// through here. Commands are argv vectors, never shell strings.
class CommandRunner
{
public:
    using LineSink = std::function<void(std::string_view line)>;

    explicit CommandRunner(RunMode mode) : m_mode(mode) {}

    RunMode mode() const noexcept { return m_mode; }
    // Called with each output line of a running command (progress display).
    void set_line_sink(LineSink sink) { m_sink = std::move(sink); }

    // Runs argv and waits. In record mode the command is appended to
    // recorded() and reported as succeeded. A command that cannot be started
    // (not installed) is an Errc::not_found error; a non-zero exit is
    // returned in the result, not as an error.
    Result<CommandResult> run(const std::vector<std::string>& argv);

    // Runs a read-only query even in record mode? No: queries only run on a
    // live host; in record mode they fail with Errc::not_found so callers fall
    // back to reading files under the root.
    Result<CommandResult> query(const std::vector<std::string>& argv) const;

    const std::vector<std::vector<std::string>>& recorded() const noexcept { return m_recorded; }

private:
    Result<CommandResult> spawn(const std::vector<std::string>& argv, const LineSink& sink) const;

    RunMode m_mode;
    LineSink m_sink;
    std::vector<std::vector<std::string>> m_recorded;
};

// Renders argv as a shell-quoted command line for display and journals.
std::string shell_quote(const std::vector<std::string>& argv);

} // namespace passthru::util
