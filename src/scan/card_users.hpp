// SPDX-License-Identifier: GPL-2.0-or-later
// Who uses each GPU card: its driver now, its nvidia device minor, and the guest
// config lines that reach it — VMs by hostpciN (an address or a cluster mapping),
// containers by devN:, lxc.mount.entry and lxc.cgroup2.devices.allow lines for
// /dev/nvidia* and /dev/dri/* — each with whether that guest runs now.
// docs/facts.md: lxc-config, nvidia-nodes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "scan/inventory.hpp"
#include "util/host_fs.hpp"

namespace passthru::scan {

// Fills GpuCard::driver, nvidia_minor and users, and HostInfo::char_majors, from
// /proc/devices, /proc/driver/nvidia/gpus/*/information, /sys/class/drm, the device
// nodes under /dev, /etc/pve/{qemu-server,lxc}/*.conf and /etc/pve/mapping/pci.cfg.
// Needs inventory.runtime (running guests, node name) read first.
void scan_card_users(const util::HostFs& fs, Inventory& inventory);

// The card's owner in one phrase: "VM 101", "containers 105, 106", "host (nvidia)".
std::string card_owner(const GpuCard& card);

// /proc/devices' character-device majors by name.
std::map<std::string, std::uint32_t> parse_char_majors(std::string_view proc_devices);
// The "Device Minor:" of /proc/driver/nvidia/gpus/<BDF>/information.
std::optional<std::uint32_t> parse_nvidia_minor(std::string_view information);

// The version of the NVIDIA kernel module in /proc/driver/nvidia/version
// ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.163.01  Tue ..."; the
// open modules say "Open Kernel Module"); nullopt when the text has none.
std::optional<std::string> nvidia_module_version(std::string_view proc_version);

// A guest config's file name, VMID.conf (qemu-server or lxc), to its VMID: 3 to 9 digits
// (100..999999999), no leading zero; nullopt for any other name.
std::optional<std::string> guest_conf_vmid(std::string_view name);

} // namespace passthru::scan
