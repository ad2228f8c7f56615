// SPDX-License-Identifier: GPL-2.0-or-later
// The signals that end a process by default and can be caught (SIGHUP,
// SIGINT, SIGQUIT, SIGTERM, SIGUSR1/2, SIGALRM, ...), held while a
// transaction or the network lock-out guard is live: a SignalScope catches
// them and remembers the first; the work polls received_signal() at its step
// boundaries and ends the way a failed step ends (the transaction restores
// its pre-images). SIGKILL cannot be caught: its recovery is the journal's
// (an interrupted generation) and, for the network guard, the detached
// restorer (apply/network_guard.hpp). SIGPIPE stays ignored (cli/main.cpp).
#pragma once

#include <csignal>
#include <string>
#include <vector>

namespace passthru::util {

// The catchable signals whose default action ends the process.
const std::vector<int>& terminating_signals();
// "SIGHUP", "SIGTERM", ...; "signal N" for others.
std::string signal_name(int sig);

class SignalScope
{
public:
    SignalScope();  // installs the handlers (nested scopes share them)
    ~SignalScope(); // puts the previous dispositions back
    SignalScope(const SignalScope&) = delete;
    SignalScope& operator=(const SignalScope&) = delete;

private:
    std::vector<struct sigaction> m_previous;
    bool m_outer = false;
};

// The first signal caught since the outermost SignalScope began (0: none);
// hangups are counted separately (hangup_received) and are not returned here.
int received_signal();
// True once SIGHUP arrived: the terminal went away, the work goes on.
bool hangup_received();

} // namespace passthru::util
