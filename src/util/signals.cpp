// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/signals.hpp"

#include <atomic>
#include <cstring>

namespace passthru::util {
namespace {

volatile std::sig_atomic_t g_signal = 0;
volatile std::sig_atomic_t g_hangup = 0;
int g_depth = 0;

extern "C" void on_signal(int sig)
{
    if (sig == SIGHUP) {
        g_hangup = 1;
        return;
    }
    if (g_signal == 0) {
        g_signal = sig;
    }
}

} // namespace

const std::vector<int>& terminating_signals()
{
    static const std::vector<int> sigs = {
        SIGHUP,    SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGIO, SIGPWR,
#ifdef SIGSTKFLT
        SIGSTKFLT,
#endif
    };
    return sigs;
}

std::string signal_name(int sig)
{
    switch (sig) {
    case SIGHUP:
        return "SIGHUP";
    case SIGINT:
        return "SIGINT";
    case SIGQUIT:
        return "SIGQUIT";
    case SIGTERM:
        return "SIGTERM";
    case SIGUSR1:
        return "SIGUSR1";
    case SIGUSR2:
        return "SIGUSR2";
    case SIGALRM:
        return "SIGALRM";
    default:
        return "signal " + std::to_string(sig);
    }
}

SignalScope::SignalScope()
{
    if (g_depth++ > 0) {
        return;
    }
    m_outer = true;
    g_signal = 0;
    g_hangup = 0;
    struct sigaction sa
    {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (const int sig : terminating_signals()) {
        struct sigaction old
        {};
        ::sigaction(sig, &sa, &old);
        m_previous.push_back(old);
    }
}

SignalScope::~SignalScope()
{
    --g_depth;
    if (!m_outer) {
        return;
    }
    const auto& sigs = terminating_signals();
    for (std::size_t i = 0; i < sigs.size() && i < m_previous.size(); ++i) {
        ::sigaction(sigs[i], &m_previous[i], nullptr);
    }
}

int received_signal()
{
    return g_signal;
}

bool hangup_received()
{
    return g_hangup != 0;
}

} // namespace passthru::util
