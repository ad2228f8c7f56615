// SPDX-License-Identifier: GPL-2.0-or-later
// passthru explain VMID: why the VM's (or the container's) most recent start
// failed. The start task's log (qmstart for a VM, vzstart for a container,
// docs/facts.md: pve-task-logs) and the kernel's log are matched against the known failures
// (profiles/failures.json), and each cause is tied to this host: the device,
// its driver, its IOMMU group and the group's other members from the scan's
// Inventory, the VM's config, and passthru's own journal.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "explain/signature.hpp"
#include "explain/task_log.hpp"
#include "scan/inventory.hpp"
#include "scan/kernel_log.hpp"
#include "util/host_fs.hpp"

namespace passthru::explain {

// The most recent start task of the guest (qmstart, vzstart).
struct StartTask
{
    TaskEntry entry;
    std::string log_path;           // host path of its log
    bool log_found = false;         // false: only the index's status line is known
    bool failed = false;            // finished with an error status
    std::vector<std::string> lines; // the log (or the status as "TASK ERROR: ...")
};

// A known failure found in a log, tied to this host.
struct Cause
{
    std::string id;
    LogKind where = LogKind::task_log;
    std::string line; // the log line that matched
    std::string cause;
    std::string fix;
    std::optional<std::string> command; // the passthru plan command that fixes it
    std::string source;
    std::map<std::string, std::string> captures;
};

enum class Verdict
{
    explained,   // the start failed and at least one known cause was found (exit 0)
    unexplained, // the start failed and no known failure matched (exit 1)
    no_failure,  // there is no failed start to explain (exit 0)
};
std::string_view to_string(Verdict verdict);

struct Report
{
    std::uint64_t vmid = 0;
    // A container when /etc/pve/lxc/VMID.conf exists and no VM config does.
    scan::GuestKind guest = scan::GuestKind::vm;
    std::optional<std::string> vm_name;     // the config's name (a container's hostname)
    std::vector<std::string> vm_functions;  // the functions the config passes (a container: of the cards it reaches)
    std::optional<StartTask> task;          // nullopt: no start task recorded
    std::size_t unreadable_index_lines = 0; // lines of index/active that are no task entry
    std::string kernel_source;              // where the kernel log came from
    std::size_t kernel_messages = 0;        // how many messages it had
    std::vector<Cause> causes;              // task-log causes first, in log order
    std::vector<std::string> unplaced;      // task log lines no known failure matched
    std::vector<std::string> notes;         // what could not be read, the journal's state
    Verdict verdict = Verdict::no_failure;
};

struct ExplainInput
{
    const util::HostFs& fs;
    const scan::Inventory& inventory;
    std::uint64_t vmid = 0;
    const std::vector<Signature>& signatures;
    scan::KernelLog kernel; // read by the caller (--kernel-log FILE, or read_host_kernel_log)
};

Report explain_start(const ExplainInput& in);

} // namespace passthru::explain
