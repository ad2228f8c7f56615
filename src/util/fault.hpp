// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string_view>

#include "util/error.hpp"

namespace passthru::util::fault {

// Test-only fault injection, compiled in only with PASSTHRU_TESTING.
// Every step that changes the host calls check() with a point name. With
// PASSTHRU_TEST_FAULT=ACTION@N (ACTION one of kill, fail, enospc; optionally
// ACTION@POINT:N) the N-th matching call kills the process with SIGKILL or
// returns an injected error. PASSTHRU_TEST_FAULT_TRACE=1 prints every point
// to stderr as "fault-point N POINT DETAIL" so tests can count them.
// In builds without PASSTHRU_TESTING check() always succeeds.
Result<void> check(std::string_view point, std::string_view detail);

} // namespace passthru::util::fault
