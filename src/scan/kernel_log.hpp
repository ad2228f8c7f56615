// SPDX-License-Identifier: GPL-2.0-or-later
// The host's kernel log, read through HostFs and parsed by format/kernel_log: what
// explain matches a failed start against, and where scan finds the reset time-outs
// of its cards (scan/card_state.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "util/host_fs.hpp"

namespace passthru::scan {

// Where the kernel log came from, and its messages.
struct KernelLog
{
    std::string source;                // "/var/log/kern.log", "--kernel-log FILE", "/dev/kmsg"
    std::vector<std::string> messages; // empty when none was read
    std::optional<std::string> note;   // why there is none
};

// The kernel log of the root: <root>/var/log/kern.log; on the live host the
// ring buffer /dev/kmsg, read without blocking; else a note.
KernelLog read_host_kernel_log(const util::HostFs& fs);

} // namespace passthru::scan
