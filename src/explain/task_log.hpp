// SPDX-License-Identifier: GPL-2.0-or-later
// Proxmox VE's task logs, read through HostFs (docs/facts.md: pve-task-logs):
// /var/log/pve/tasks/index and its predecessor index.1 (finished tasks: "UPID ENDTIME
// STATUS") and /var/log/pve/tasks/active ("UPID SAVED [ENDTIME [STATUS]]"), one log per
// task at /var/log/pve/tasks/<X>/<UPID>, X the last hex digit of the UPID's
// start time.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/kernel_log.hpp"
#include "util/host_fs.hpp"

namespace passthru::explain {

// "UPID:node:pid:pstart:starttime:type:id:user:", as pve-common decodes it.
struct Upid
{
    std::string text; // the whole UPID as written
    std::string node;
    std::uint64_t pid = 0;
    std::uint64_t pstart = 0;
    std::uint64_t starttime = 0; // seconds since the epoch
    char subdir = '0';           // the last hex digit of the start time: the log's directory
    std::string type;            // "qmstart"
    std::string id;              // "101"
    std::string user;
};

// nullopt unless `text` is a UPID exactly (pid 8 hex digits, pstart 8 or 9,
// starttime 8, no ':' '/' or white space in type, id and user).
std::optional<Upid> parse_upid(std::string_view text);

// The host path of a task's log.
std::string task_log_path(const Upid& upid);

inline constexpr std::string_view k_task_dir = "/var/log/pve/tasks";

// The task lists under k_task_dir, oldest first: pve-common appends finished tasks to
// `index` and renames it to `index.1` once it passes 50,000 bytes (active_workers), so
// right after that the last start of a VM is in index.1; `active` holds the running and
// the recent ones.
struct TaskList
{
    std::string_view name;
    bool active = false; // the active file's "UPID SAVED [ENDTIME STATUS]" lines
};
inline constexpr std::array<TaskList, 3> k_task_lists = {{{"index.1", false}, {"index", false}, {"active", true}}};

struct TaskEntry
{
    Upid upid;
    std::optional<std::uint64_t> endtime; // nullopt: still running
    std::string status;                   // "OK", "WARNINGS: 2", or the error
};

// Whether a finished task failed, as pve-common judges a status: anything but
// "OK" and "WARNINGS: N".
bool status_is_error(std::string_view status);

struct TaskIndex
{
    std::vector<TaskEntry> entries;
    std::size_t unreadable_lines = 0; // lines that are no task entry
};

// The text of `index` (active = false) or `active` (active = true).
TaskIndex parse_task_index(std::string_view text, bool active);

// The most recent task of `type` for `id` in both files under the root
// (ties: the later line); nullopt when there is none. Unreadable lines are
// counted in `unreadable`. Errc::io when a list exists but cannot be read
// (a failed start must never be reported as none).
std::optional<TaskEntry> latest_task(const util::HostFs& fs, std::string_view type, std::string_view id, std::size_t& unreadable);

// The lines of a log (format/kernel_log.hpp), shared with the kernel log's reader.
using format::kernel_log::split_log_lines;

} // namespace passthru::explain
