// SPDX-License-Identifier: GPL-2.0-or-later
// passthru verify --ct N: are the NVIDIA devices container N's config names
// ready for it? On the host (through HostFs): every /dev/nvidia* node a devN:
// or lxc.mount.entry line names exists as a character device with the major
// and minor it must have (195 and the card's minor from
// /proc/driver/nvidia/gpus/*/information, 255 for nvidiactl, nvidia-uvm's
// major from /proc/devices), a bind-mounted node is allowed by an
// lxc.cgroup2.devices.allow line, and no rule names a minor no card has. When
// the container runs, from inside it (a CtExec: pct exec or lxc-attach): each
// node opens, and the NVIDIA userspace library is the host module's version.
// docs/facts.md: lxc-config, nvidia-nodes, ct-devices.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apply/verify.hpp"
#include "scan/inventory.hpp"
#include "util/command_runner.hpp"
#include "util/host_fs.hpp"

namespace passthru::apply {

// Runs argv inside the container and returns its exit status and output (a
// command that cannot start there: Errc::not_found). Empty: the inside is not
// reached (under --root, or the container is not running).
using CtExec = std::function<Result<util::CommandResult>(const std::vector<std::string>& argv)>;

// The userspace versions in a list of file names: the X.Y[.Z] of each
// libnvidia-ml.so.X.Y[.Z], each once, in order of appearance.
std::vector<std::string> nvml_library_versions(std::string_view listing);

// The fixed script run inside the container: the libnvidia-ml.so.* files of
// the places distributions and NVIDIA's installer put them, one a line.
extern const std::vector<std::string> k_ct_userspace_probe;

// Every check for container `ctid`. Errc::not_found when it has no config.
// `exec` empty: the inside checks are said as notes.
Result<VerifyReport> verify_container(const scan::Inventory& inventory, const util::HostFs& fs, std::uint64_t ctid, const CtExec& exec);

} // namespace passthru::apply
