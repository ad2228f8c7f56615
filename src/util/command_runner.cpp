// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/command_runner.hpp"

#include "util/signals.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "util/fault.hpp"

namespace passthru::util {

namespace {

// The NULL-terminated char* array execve(2) takes, pointing into `words`.
std::vector<char*> c_strings(std::vector<std::string>& words)
{
    std::vector<char*> out;
    out.reserve(words.size() + 1);
    for (auto& w : words) {
        out.push_back(w.data());
    }
    out.push_back(nullptr);
    return out;
}

} // namespace

namespace {

bool executable_file(const std::string& path)
{
    struct stat st
    {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

} // namespace

bool is_trusted_command(std::string_view argv0)
{
    const auto slash = argv0.rfind('/');
    if (slash == std::string_view::npos) {
        return !argv0.empty() && argv0 != "." && argv0 != "..";
    }
    const std::string_view dir = argv0.substr(0, slash);
    const std::string_view name = argv0.substr(slash + 1);
    if (name.empty() || name == "." || name == "..") {
        return false;
    }
#ifdef PASSTHRU_INSTALLED_HELPER_DIR
    if (dir == PASSTHRU_INSTALLED_HELPER_DIR) {
        return true;
    }
#endif
    return std::find(k_command_dirs.begin(), k_command_dirs.end(), dir) != k_command_dirs.end();
}

std::string command_lang(const char* caller_lang)
{
    const std::string_view lang = caller_lang != nullptr ? caller_lang : "";
    const auto word = [](std::string_view w, std::string_view extra) {
        return !w.empty() && w.size() <= 32
               && w.find_first_not_of(std::string("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") + std::string(extra))
                      == std::string_view::npos;
    };
    // language[_TERRITORY][.codeset][@modifier]
    const auto at = lang.find('@');
    const std::string_view base = lang.substr(0, at);
    const auto dot = base.find('.');
    const bool ok = word(base.substr(0, dot), "_") && (dot == std::string_view::npos || word(base.substr(dot + 1), "-"))
                    && (at == std::string_view::npos || word(lang.substr(at + 1), ""));
    return "LANG=" + (ok ? std::string(lang) : std::string("C.UTF-8"));
}

std::vector<std::string> command_environment()
{
    std::vector<std::string> env(k_command_env.begin(), k_command_env.end());
    env.push_back(command_lang(std::getenv("LANG")));
    return env;
}

Result<std::string> resolve_command(std::string_view argv0)
{
    if (!is_trusted_command(argv0)) {
        return fail(Errc::internal, "refusing to run '" + std::string(argv0) + "': not a command of the system directories");
    }
    if (argv0.find('/') != std::string_view::npos) {
        if (executable_file(std::string(argv0))) {
            return std::string(argv0);
        }
        return fail(Errc::not_found, "cannot run " + std::string(argv0) + ": no such program");
    }
    for (const auto dir : k_command_dirs) {
        std::string path = std::string(dir) + "/" + std::string(argv0);
        if (executable_file(path)) {
            return path;
        }
    }
    return fail(Errc::not_found, "cannot run " + std::string(argv0) + ": it is in none of /usr/sbin, /usr/bin, /sbin, /bin");
}

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
    PASSTHRU_TRY(fault::check("command", shell_quote(argv)));
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

namespace {

// passthru ignores SIGPIPE (cli/main.cpp); an ignored signal stays ignored
// across exec, and a shell cannot undo that: the command gets the default
// action back. The caller destroys attr.
void default_sigpipe(posix_spawnattr_t& attr)
{
    posix_spawnattr_init(&attr);
    sigset_t default_signals;
    sigemptyset(&default_signals);
    sigaddset(&default_signals, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &default_signals);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
}

} // namespace

Result<CommandResult> CommandRunner::spawn(const std::vector<std::string>& argv, const LineSink& sink) const
{
    auto program = resolve_command(argv.front());
    if (!program) {
        return tl::unexpected(program.error());
    }
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        return fail(Errc::io, std::string("cannot create a pipe: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);

    std::vector<std::string> args = argv;
    std::vector<std::string> env = command_environment();
    std::vector<char*> c_argv = c_strings(args);
    std::vector<char*> c_env = c_strings(env);

    posix_spawnattr_t attr;
    default_sigpipe(attr);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, program->c_str(), &actions, &attr, c_argv.data(), c_env.data());
    posix_spawnattr_destroy(&attr);
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

Result<pid_t> spawn_detached(const std::function<void()>& body)
{
    std::fflush(nullptr);
    const pid_t child = ::fork();
    if (child < 0) {
        return fail(Errc::io, std::string("cannot fork: ") + std::strerror(errno));
    }
    if (child > 0) {
        return child;
    }
    ::setsid();
    for (const int sig : terminating_signals()) {
        std::signal(sig, SIG_IGN);
    }
    if (const int null = ::open("/dev/null", O_RDWR); null >= 0) {
        ::dup2(null, STDIN_FILENO);
        ::dup2(null, STDOUT_FILENO);
        ::dup2(null, STDERR_FILENO);
    }
    const long open_max = std::min(::sysconf(_SC_OPEN_MAX), 65536L);
    for (int fd = 3; fd < open_max; ++fd) {
        ::close(fd);
    }
    try {
        body();
    } catch (...) {
        ::_exit(1);
    }
    ::_exit(0);
}

} // namespace passthru::util
