// SPDX-License-Identifier: GPL-2.0-or-later
// The kernel's log in the forms an operator captures it: dmesg's text (with
// or without "[    1.234567] " prefixes, or dmesg -x's "kern  :err   : "
// level), journalctl -k's short format ("Nov 27 10:00:01 pve kernel: ..."),
// and /dev/kmsg records ("3,1234,5678901,-;message", continuation lines
// " KEY=value"). Each comes down to the message text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/host_fs.hpp"

namespace passthru::explain {

// The message of one line of a kernel log; nullopt for a line that carries
// none (a /dev/kmsg dictionary line, an empty line, journalctl's "-- Boot ...").
std::optional<std::string> kernel_message(std::string_view line);

// The messages of a whole log; Errc::usage naming `what` when it holds NUL
// bytes (a binary file, not a log).
Result<std::vector<std::string>> kernel_messages(std::string_view text, const std::string& what);

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

} // namespace passthru::explain
