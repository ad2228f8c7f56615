// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string_view>

#include "util/error.hpp"

namespace passthru::util::fault {

// Test-only fault injection. passthru_core (and so the passthru binary) has
// the no-op check(); only the test-only passthru-faults binary (tests/) links
// fault.cpp compiled with PASSTHRU_FAULT_HOOK, whose check() acts:
// Every step that changes the host calls check() with a point name. With
// PASSTHRU_TEST_FAULT=ACTION@N (ACTION one of kill, fail, enospc; optionally
// ACTION@POINT:N) the N-th matching call kills the process with SIGKILL or
// returns an injected error. PASSTHRU_TEST_FAULT_TRACE=1 prints every point
// to stderr as "fault-point N POINT DETAIL" so tests can count them.
// Without PASSTHRU_FAULT_HOOK check() always succeeds and reads no environment.
Result<void> check(std::string_view point, std::string_view detail);

} // namespace passthru::util::fault
