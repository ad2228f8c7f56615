// SPDX-License-Identifier: GPL-2.0-or-later
// The lock-out guard for --apply-network --confirm-timeout, in the
// spirit of `netplan try`: after the new network file is in place and
// `ifreload -a` ran, wait for `passthru confirm` (run from a new connection,
// which proves the host is still reachable); without it, put the previous
// files back and run `ifreload -a` again.
//
// The handshake goes through files under <root>/var/lib/passthru/:
//   network-confirm.pending    written by the guard: "token=<hex>", "deadline=<unix s>",
//                              "ssh=<SSH_CONNECTION of the applying session>"
//   network-confirm.ok         `passthru confirm` renames .pending to this name
//   network-confirm.restoring  the guard renames .pending to this name at the
//                              deadline (or on a signal) before it restores
// The decision is that one rename(2) of .pending: it is atomic, so exactly
// one of confirm and the deadline wins, and the loser sees which name the
// file has now and says so. The guard removes the files when it ends.
//
// Signals: the guard runs under a util::SignalScope (the CLI's). SIGHUP (the
// session went away) does not stop it: it goes on waiting for a confirm
// from a new connection and restores at the deadline. Every other signal
// that ends a process restores at once. And in case the applying process
// dies all the same (SIGKILL, OOM), the guard forks a detached restorer
// (its own session, terminating signals ignored, sharing the journal's
// lock): when the applying process is gone, it waits for the deadline and
// restores the network files and runs `ifreload -a` itself; the
// generation is then left interrupted, for `passthru rollback`, as any kill.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan/plan.hpp"
#include "util/command_runner.hpp"
#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::apply {

inline constexpr std::string_view k_confirm_pending = "/var/lib/passthru/network-confirm.pending";
inline constexpr std::string_view k_confirm_ok = "/var/lib/passthru/network-confirm.ok";
inline constexpr std::string_view k_confirm_restoring = "/var/lib/passthru/network-confirm.restoring";

enum class GuardOutcome
{
    confirmed, // `passthru confirm` arrived in time: the new network stays
    restored,  // timed out: previous files back, ifreload -a ran again
};

struct NetworkGuardSpec
{
    // The network files as they were before apply (nullopt: did not exist),
    // restored in this order when no confirmation comes.
    std::vector<std::pair<std::string, std::optional<std::string>>> previous;
    // SSH_CONNECTION of the applying session (live host only); `confirm`
    // refuses to be run from this very connection.
    std::optional<std::string> ssh_connection;
};

// Injectable time for tests; the defaults use steady_clock and sleep_for.
struct GuardHooks
{
    std::function<std::chrono::steady_clock::time_point()> now;
    std::function<void(std::chrono::milliseconds)> sleep;
    std::function<void(std::string_view)> message; // instructions for the user (stderr in the CLI)
    // Fork the detached restorer (the CLI does; unit tests with fake time do not).
    bool detached_restorer = false;
};

// True when a plan asks for the guard: --apply-network with --confirm-timeout
// (the planner refuses --apply-network without it when the change risks a lock-out).
bool network_guard_wanted(const plan::Plan& plan);
// The previous content of /etc/network/interfaces and interfaces.new, from the plan's file changes.
NetworkGuardSpec network_guard_spec(const plan::Plan& plan);

// Call right after the plan's files are written and its `ifreload -a` ran.
// Errors: Errc::io when the handshake file cannot be written (nothing was
// restored: the caller decides); Errc::rollback_failed when the restore failed.
Result<GuardOutcome> run_network_guard(const util::HostFs& fs, util::CommandRunner& runner, const NetworkGuardSpec& spec,
                                       std::chrono::seconds timeout, const GuardHooks& hooks = {});

// What `passthru confirm` does: checks a guard waits and writes the token.
// A guard waits while its apply holds the journal's lock; a handshake file
// nobody holds the lock for is a leftover of an apply that ended (killed).
// Errc::not_found when none waits; Errc::precondition when run from the
// applying connection itself or after the deadline.
Result<void> confirm_network(const util::HostFs& fs, const std::optional<std::string>& ssh_connection);
// Removes a handshake no guard waits on any more (the caller holds the
// journal's lock, so no guard runs), e.g. after a rollback.
void clear_stale_confirm(const util::HostFs& fs);

} // namespace passthru::apply
