// SPDX-License-Identifier: GPL-2.0-or-later
// The known failures of a VM start as data (profiles/failures.json, schema
// passthru.failures/1 in docs/data.md): each row a pattern that finds its
// message in the task log or the kernel log, the cause and the fix. Parsed here;
// explain/signature.* compiles and matches the patterns, and hands the loader
// the check of a pattern.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_dir.hpp"
#include "util/error.hpp"

namespace passthru::data {

// Where a failure's message appears.
enum class LogKind
{
    task_log,   // the Proxmox VE task log of the start (qemu-server, QEMU's stderr)
    kernel_log, // the kernel's log (dmesg, journalctl -k, /dev/kmsg)
};
std::string_view to_string(LogKind kind);

enum class OptionWhen
{
    always,
    other_devices_in_group,
};

// The host facts a cause or fix may name besides its pattern's captures.
inline constexpr std::string_view k_host_placeholders[] = {
    "vmid",           "gpus", "pci", "driver", "group", "group_members", "address_bits", "interrupt_remapping", "bar_size",
    "nvidia_version", // the host's nvidia kernel module (/proc/driver/nvidia/version), or "not loaded"
    "nvidia_nodes",   // the cards on nvidia and their nodes: "0000:82:00 /dev/nvidia1", or "none"
    "guest",          // "VM 101" or "container 105"
};

// One row of profiles/failures.json.
struct FailureRow
{
    std::string id;
    LogKind where = LogKind::task_log;
    std::string pattern; // checked by the loader's PatternCheck
    std::string cause;   // may hold {placeholders} (a capture or a host fact)
    std::string fix;
    // Present: `passthru plan --vm VMID --gpus SLOTS` fixes it, with this
    // option added ("" for none); absent: the fix is a manual step.
    std::optional<std::string> plan_option;
    // When plan_option is added: always, or only when the device's IOMMU group holds a
    // device that is neither a bridge nor a function of a card the VM passes (then only
    // splitting the group helps; otherwise the plan with the card binds its functions).
    OptionWhen plan_option_when = OptionWhen::always;
    std::string source; // the source file and function that emit the message
};

// A pattern's capture names, or why it is no pattern (Errc::usage, the reason).
using PatternCheck = std::function<Result<std::vector<std::string>>(std::string_view pattern)>;

// Errc::usage naming `where` and the row when the text breaks the schema, a
// pattern fails CHECK, or a {placeholder} names neither a capture of its
// pattern nor a host fact.
Result<std::vector<FailureRow>> parse_failures(std::string_view json_text, const std::string& where, const PatternCheck& check);
// profiles/failures.json read through DATA and parsed as above.
Result<std::vector<FailureRow>> load_failures(const DataDir& data, const PatternCheck& check);

} // namespace passthru::data
