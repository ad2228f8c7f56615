// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/command_runner.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/fault.hpp"

extern char** environ;

namespace passthru::util {

std::string shell_quote(const std::vector<std::string>& argv)
{
    std::string out;
    for (const auto& arg : argv) {
        if (!out.empty()) {
            out += ' ';
        }
        const bool plain =
            !arg.empty()
            && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:,+@%") == std::string::npos;
        if (plain) {
            out += arg;
            continue;
        }
        out += '\'';
        for (char c : arg) {
            if (c == '\'') {
                out += "'\\''";
            } else {
                out += c;
            }
        }
        out += '\'';
    }
    return out;
}

Result<CommandResult> CommandRunner::run(const std::vector<std::string>& argv)
{
    if (argv.empty()) {
        return fail(Errc::internal, "empty command");
    }
    if (auto injected = fault::check("command", shell_quote(argv)); !injected) {
        return tl::unexpected(injected.error());
    }
    if (m_mode == RunMode::record) {
        m_recorded.push_back(argv);
        return CommandResult{};
    }
    return spawn(argv, m_sink);
}

Result<CommandResult> CommandRunner::query(const std::vector<std::string>& argv) const
{
    if (m_mode == RunMode::record) {
        return fail(Errc::not_found, "commands are not run under --root");
    }
    return spawn(argv, {});
}

Result<CommandResult> CommandRunner::spawn(const std::vector<std::string>& argv, const LineSink& sink) const
{
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        return fail(Errc::io, std::string("cannot create a pipe: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);

    std::vector<char*> c_argv;
    c_argv.reserve(argv.size() + 1);
    for (const auto& a : argv) {
        c_argv.push_back(const_cast<char*>(a.c_str()));
    }
    c_argv.push_back(nullptr);

    pid_t pid = 0;
    const int rc = ::posix_spawnp(&pid, c_argv[0], &actions, nullptr, c_argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[1]);
    if (rc != 0) {
        ::close(pipe_fds[0]);
        return fail(rc == ENOENT ? Errc::not_found : Errc::io, "cannot run " + argv[0] + ": " + std::strerror(rc));
    }

    CommandResult result;
    std::string pending;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        result.output.append(buf, static_cast<std::size_t>(n));
        if (sink) {
            pending.append(buf, static_cast<std::size_t>(n));
            std::size_t pos = 0;
            while ((pos = pending.find('\n')) != std::string::npos) {
                sink(std::string_view(pending).substr(0, pos));
                pending.erase(0, pos + 1);
            }
        }
    }
    if (sink && !pending.empty()) {
        sink(pending);
    }
    ::close(pipe_fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            return fail(Errc::io, "cannot wait for " + argv[0] + ": " + std::strerror(errno));
        }
    }
    if (WIFEXITED(status)) {
        result.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        result.exit_code = 128 + WTERMSIG(status);
    } else {
        result.exit_code = 1;
    }
    return result;
}

} // namespace passthru::util
