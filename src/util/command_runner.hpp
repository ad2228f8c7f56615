// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <array>
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

// The system directories a command is taken from, in this order: where
// Debian's packages install the tools passthru runs. Not /usr/local: it is
// the local administrator's (Debian policy; group staff may write there), and
// not the caller's PATH (docs/facts.md: command-environment).
inline constexpr std::array<std::string_view, 4> k_command_dirs{"/usr/sbin", "/usr/bin", "/sbin", "/bin"};
// The environment of a command passthru runs, apart from LANG: a fixed PATH
// (the directories above, for the tools' own children) and root's home;
// nothing else of the caller's (no LD_*, no pkgdatadir, no GRUB_*).
inline constexpr std::array<std::string_view, 2> k_command_env{
    "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/root",
};

// The LANG a command gets: the caller's when it is a locale name
// (language[_TERRITORY][.codeset][@modifier], "C", "POSIX"), else C.UTF-8.
// grub-mkconfig writes it into grub.cfg (set lang=...) and translates the menu
// by it, so update-grub run by passthru makes the grub.cfg the administrator's
// own run would (docs/facts.md: command-environment).
std::string command_lang(const char* caller_lang);

// The whole environment of a command: k_command_env and command_lang(LANG).
std::vector<std::string> command_environment();

// True when argv[0] names a command passthru may run: a plain name (found in
// k_command_dirs), or the absolute path of a program in one of those
// directories or in passthru's own helper directory (PASSTHRU_INSTALLED_HELPER_DIR,
// when the build defines one). "/tmp/x/update-grub" or "../sh" are not.
bool is_trusted_command(std::string_view argv0);

// The absolute path of the command argv0: a plain name's first executable
// regular file in k_command_dirs, or a trusted absolute path itself.
// Errc::not_found when there is none; Errc::internal for an untrusted path.
Result<std::string> resolve_command(std::string_view argv0);

// The second seam to the host (after HostFs): every external command passthru
// runs (update-initramfs, update-grub, proxmox-boot-tool, qm, ifreload) goes
// through here. Commands are argv vectors, never shell strings; each runs by
// its absolute path (resolve_command) with command_environment() as its environment.
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

// Forks a detached child process that runs `body` and exits (_exit(0); 1
// when body throws): a session of its own, the terminating signals ignored
// (util/signals.hpp), standard input and output on /dev/null and every other
// inherited descriptor closed, so it holds no lock of its parent. Returns its pid.
Result<pid_t> spawn_detached(const std::function<void()>& body);

} // namespace passthru::util
