// SPDX-License-Identifier: GPL-2.0-or-later
// The kernel's log in the forms an operator captures it: dmesg's text (with
// or without "[    1.234567] " prefixes, or dmesg -x's "kern  :err   : "
// level), journalctl -k's short format ("Nov 27 10:00:01 pve kernel: ..."),
// and /dev/kmsg records ("3,1234,5678901,-;message", continuation lines
// " KEY=value"). Each comes down to the message text. Text in, text out: scan
// reads the host's log (scan/kernel_log.hpp), explain and scan match its lines.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace passthru::format::kernel_log {

// The message of one line of a kernel log; nullopt for a line that carries
// none (a /dev/kmsg dictionary line, an empty line, journalctl's "-- Boot ...").
std::optional<std::string> kernel_message(std::string_view line);

// The messages of a whole log; Errc::usage naming `what` when it holds NUL
// bytes (a binary file, not a log).
Result<std::vector<std::string>> kernel_messages(std::string_view text, const std::string& what);

// The lines of a text, each cut to k_max_line_bytes (marked "…[cut]"),
// control characters but tab shown as '?', at most k_max_lines (the last
// ones: the end of a log says why it stopped).
inline constexpr std::size_t k_max_line_bytes = 4096;
inline constexpr std::size_t k_max_lines = 200000;
std::vector<std::string> split_log_lines(std::string_view text);

// The first message of every boot ("Linux version 6.8.12-4-pve ..."): what a log
// that spans boots (kern.log) is cut at.
inline constexpr std::string_view k_boot_banner = "Linux version ";

// The messages from the last boot banner on (all of them when there is none: the
// ring buffer, or a log that starts inside the boot).
std::vector<std::string> since_last_boot(std::vector<std::string> messages);

// "vfio-pci 0000:10:00.0: not ready 65535ms after FLR; giving up": the kernel gave up
// waiting for a function to answer after a reset or a power-state change
// (drivers/pci/pci.c, pci_dev_wait; docs/facts.md: card-state). The "; waiting"
// lines before it are not one: a function that answers later logs "ready".
struct ReadyTimeout
{
    std::string function; // "0000:10:00.0"
    std::string event;    // what it did not come back from: "FLR", "bus reset", "PM D3hot->D0", ...
    std::string message;  // the message as logged
};

// The give-up messages among MESSAGES, in their order.
std::vector<ReadyTimeout> ready_timeouts(const std::vector<std::string>& messages);

} // namespace passthru::format::kernel_log
