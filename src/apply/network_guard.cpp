// SPDX-License-Identifier: GPL-2.0-or-later
#include "apply/network_guard.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <thread>

#include "apply/journal.hpp"
#include "plan/after_step.hpp"
#include "plan/paths.hpp"
#include "util/command_runner.hpp"
#include "util/signals.hpp"
#include "util/strings.hpp"

namespace passthru::apply {

namespace {

std::string new_token()
{
    std::random_device rd;
    std::string out;
    for (int i = 0; i < 4; ++i) {
        out += util::hex(rd(), 8);
    }
    return out;
}

std::optional<std::string> field(std::string_view text, std::string_view key)
{
    for (const auto& line : util::split_lines(text)) {
        if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == '=') {
            return line.substr(key.size() + 1);
        }
    }
    return std::nullopt;
}

Result<void> restore(const util::HostFs& fs, const NetworkGuardSpec& spec)
{
    for (const auto& [path, content] : spec.previous) {
        if (content) {
            auto w = fs.write_file_atomic(path, *content, 0644, util::FsSync::yes);
            if (!w) {
                return fail(Errc::rollback_failed, "cannot restore " + path + ": " + w.error().what());
            }
        } else if (fs.exists(path)) {
            auto r = fs.remove_file(path);
            if (!r) {
                return fail(Errc::rollback_failed, "cannot remove " + path + ": " + r.error().what());
            }
        }
    }
    return {};
}

void cleanup(const util::HostFs& fs)
{
    for (const auto path : {k_confirm_ok, k_confirm_pending, k_confirm_restoring}) {
        if (fs.exists(path)) {
            (void)fs.remove_file(path);
        }
    }
}

} // namespace

bool network_guard_wanted(const plan::Plan& plan)
{
    const auto& net = plan.request.network;
    return net && net->apply == plan::ApplyNetwork::now && net->confirm_timeout_seconds.has_value() && !plan.refused();
}

NetworkGuardSpec network_guard_spec(const plan::Plan& plan)
{
    NetworkGuardSpec spec;
    // interfaces.new first: restoring interfaces last leaves the live file right even if .new fails.
    for (const auto path : {plan::k_interfaces_new, plan::k_interfaces}) {
        for (const auto& f : plan.files) {
            if (f.path == path) {
                spec.previous.emplace_back(f.path, f.before);
            }
        }
    }
    return spec;
}

namespace {

std::string file_name(std::string_view host_path)
{
    return std::string(host_path.substr(host_path.rfind('/') + 1));
}

// True when `passthru confirm` renamed this guard's handshake to .ok.
bool confirmed_by(const util::HostFs& fs, const std::string& token)
{
    auto ok = fs.read_file(k_confirm_ok);
    return ok && field(*ok, "token") == token;
}

enum class Decision
{
    confirmed,
    restore,
};

// The one decision: rename .pending to .restoring unless confirm renamed it to .ok first.
Decision decide_restore(const util::HostFs& fs, const std::string& token)
{
    if (auto r = fs.rename_in_dir(k_confirm_pending, file_name(k_confirm_restoring)); !r && confirmed_by(fs, token)) {
        return Decision::confirmed;
    }
    return Decision::restore;
}

Result<void> restore_and_reload(const util::HostFs& fs, util::CommandRunner& runner, const NetworkGuardSpec& spec)
{
    if (auto r = restore(fs, spec); !r) {
        return tl::unexpected(r.error());
    }
    const auto reload_argv = plan::ifreload_argv();
    auto reload = runner.run(reload_argv);
    if (!reload) {
        return fail(Errc::rollback_failed,
                    "the previous network files are back, but " + util::shell_quote(reload_argv) + " failed: " + reload.error().what());
    }
    if (reload->exit_code != 0) {
        return fail(Errc::rollback_failed, "the previous network files are back, but " + util::shell_quote(reload_argv) + " exited with "
                                               + std::to_string(reload->exit_code) + ": " + reload->output);
    }
    return {};
}

// The detached restorer (see the header), in the child util::spawn_detached
// made: it holds no descriptor of the applying process (so not the journal's
// lock: a rollback after the kill must not wait for the deadline) and opens
// the root again.
void restorer_main(const std::filesystem::path& root, util::CommandRunner& runner, const NetworkGuardSpec& spec, pid_t parent,
                   std::chrono::steady_clock::time_point deadline)
{
    auto fs = util::HostFs::open(root);
    if (!fs) {
        return;
    }
    runner.set_line_sink({});
    while (::getppid() == parent) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    // The applying process is gone without ending the guard: the deadline
    // still holds, unless a rollback removed the handshake meanwhile.
    while (std::chrono::steady_clock::now() < deadline && fs->exists(k_confirm_pending)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    // Won the decision, or the applying process had won it and died before it restored.
    if (fs->rename_in_dir(k_confirm_pending, file_name(k_confirm_restoring)) || fs->exists(k_confirm_restoring)) {
        (void)restore_and_reload(*fs, runner, spec);
        (void)fs->remove_file(k_confirm_restoring);
    }
}

// The restorer's pid, stopped when the guard ends in the applying process.
struct Restorer
{
    pid_t pid = -1;
    Restorer() = default;
    Restorer(const Restorer&) = delete;
    Restorer& operator=(const Restorer&) = delete;
    ~Restorer()
    {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
            }
        }
    }
};

} // namespace

Result<GuardOutcome> run_network_guard(const util::HostFs& fs, util::CommandRunner& runner, const NetworkGuardSpec& spec,
                                       std::chrono::seconds timeout, const GuardHooks& hooks)
{
    const auto now = hooks.now ? hooks.now : [] { return std::chrono::steady_clock::now(); };
    const auto sleep = hooks.sleep ? hooks.sleep : [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
    const auto say = hooks.message ? hooks.message : [](std::string_view) {};

    const std::string token = new_token();
    const auto deadline_wall = static_cast<long long>(std::time(nullptr)) + timeout.count();
    std::string pending = "token=" + token + "\ndeadline=" + std::to_string(deadline_wall) + "\n";
    if (spec.ssh_connection) {
        pending += "ssh=" + *spec.ssh_connection + "\n";
    }
    cleanup(fs);
    if (auto d = fs.create_directories(util::dir_name(k_confirm_pending)); !d) {
        return tl::unexpected(d.error());
    }
    if (auto w = fs.write_file_atomic(k_confirm_pending, pending, 0600, util::FsSync::yes); !w) {
        return tl::unexpected(w.error());
    }
    const auto deadline = now() + timeout;
    Restorer restorer;
    if (hooks.detached_restorer) {
        const pid_t parent = ::getpid();
        const auto restorer_deadline = std::chrono::steady_clock::now() + timeout;
        auto child = util::spawn_detached([&] { restorer_main(fs.root(), runner, spec, parent, restorer_deadline); });
        if (!child) {
            cleanup(fs);
            return fail(Errc::io, std::string("cannot start the network guard's restorer: ") + child.error().what());
        }
        restorer.pid = *child;
    }
    say("the new network configuration is active. Open a NEW connection to this host and run 'passthru confirm' within "
        + std::to_string(timeout.count()) + " s; otherwise the previous configuration is restored");

    int sig = 0;
    while (now() < deadline) {
        if (confirmed_by(fs, token)) {
            cleanup(fs);
            say("confirmed: the new network configuration stays");
            return GuardOutcome::confirmed;
        }
        sig = util::received_signal();
        if (sig != 0) {
            break;
        }
        sleep(std::chrono::milliseconds(500));
    }
    if (decide_restore(fs, token) == Decision::confirmed) {
        cleanup(fs);
        say("confirmed: the new network configuration stays");
        return GuardOutcome::confirmed;
    }
    if (sig != 0) {
        say("interrupted by " + util::signal_name(sig) + ": restoring the previous network configuration");
    } else {
        say("no confirmation within " + std::to_string(timeout.count()) + " s: restoring the previous network configuration");
    }
    auto restored = restore_and_reload(fs, runner, spec);
    cleanup(fs);
    if (!restored) {
        return tl::unexpected(restored.error());
    }
    return GuardOutcome::restored;
}

namespace {

Error too_late()
{
    return Error(Errc::precondition, "too late: the confirmation deadline has passed and the previous network "
                                     "configuration is being restored");
}

} // namespace

Result<void> confirm_network(const util::HostFs& fs, const std::optional<std::string>& ssh_connection)
{
    auto pending = fs.read_file(k_confirm_pending);
    if (!pending) {
        if (fs.exists(k_confirm_restoring) && Journal(fs).locked_by_other()) {
            return tl::unexpected(too_late());
        }
        return fail(Errc::not_found, "nothing to confirm: no network change is waiting for confirmation");
    }
    if (!Journal(fs).locked_by_other()) {
        return fail(Errc::not_found,
                    "nothing to confirm: no apply is waiting (" + std::string(k_confirm_pending) + " is left from one that ended)");
    }
    const auto token = field(*pending, "token");
    if (!token || token->empty()) {
        return fail(Errc::parse, std::string(k_confirm_pending) + " has no token");
    }
    if (const auto deadline = field(*pending, "deadline")) {
        const auto when = util::parse_int(*deadline);
        if (when && *when < static_cast<long long>(std::time(nullptr))) {
            return tl::unexpected(too_late());
        }
    }
    const auto applying = field(*pending, "ssh");
    if (applying && ssh_connection && *applying == *ssh_connection) {
        Error e(Errc::precondition, "this is the connection that applied the change; it does not prove the host is "
                                    "reachable with the new configuration");
        e.with_hint("open a new SSH connection to the host and run 'passthru confirm' there");
        return tl::unexpected(std::move(e));
    }
    // The decision: this rename or the guard's (to .restoring), whichever comes first.
    if (auto r = fs.rename_in_dir(k_confirm_pending, file_name(k_confirm_ok)); !r) {
        if (r.error().code() == Errc::not_found) {
            return tl::unexpected(too_late());
        }
        return tl::unexpected(r.error());
    }
    return {};
}

void clear_stale_confirm(const util::HostFs& fs)
{
    cleanup(fs);
}

} // namespace passthru::apply
