// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace passthru::format {

// The grammars of the values passthru renders into generated, root-run
// configuration (modprobe.d, the kernel command line, VM configs, interfaces).
// Every such value that comes from the host (sysfs links and attributes,
// files under the root) is checked here before it is rendered, so a driver
// name carrying a newline cannot become a line of its own.
// One table, one entry per kind; docs/facts.md "value grammars" cites them.
enum class Grammar
{
    module_name,    // [A-Za-z0-9_-]+, at most 55 bytes (MODULE_NAME_LEN - 1)
    pci_id,         // vendor:device, "10de:1e07" (4 lower-case hex digits each)
    pci_address,    // domain:bus:slot.function, "0000:41:00.0"
    nic_name,       // the kernel's dev_valid_name(): 1..15 bytes, not "." or "..", no '/', ':' or white space
    vm_id,          // Proxmox VE VMID: 100..999999999, no leading zero
    storage_id,     // Proxmox VE storage id: [a-z][a-z0-9._-]*[a-z0-9] (case-insensitive)
    kernel_release, // a kernel release (uname -r): 1..64 bytes of [A-Za-z0-9._+~-], not starting with '.' or '-'
    kernel_arg,     // one word of a kernel command line: 1..1024 printable ASCII bytes, no space
    line_text,      // text inside one line of a line-based file: no control character (line break, carriage return,
                    // NUL, escape, DEL); every value a template renders, every string of a profile
};

bool matches(Grammar grammar, std::string_view value);
// What the grammar allows, for error messages ("a module name ([A-Za-z0-9_-], ...)").
std::string_view describe(Grammar grammar);
// nullopt when `value` matches; else one line naming `what`, the value
// (control characters escaped) and the grammar.
std::optional<std::string> invalid_value(Grammar grammar, std::string_view value, std::string_view what);

} // namespace passthru::format
