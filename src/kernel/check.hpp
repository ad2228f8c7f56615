// SPDX-License-Identifier: GPL-2.0-or-later
// `passthru kernel check`: for each installed kernel, whether passthrough will work when it
// boots. Each check reads that kernel's own files under the root: its initramfs (the image
// itself, kernel/initramfs.hpp), its module tree (libkmod), DKMS's build tree
// (/var/lib/dkms, docs/facts.md: dkms) and the known regressions
// (profiles/host/kernel-regressions.json).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "data/data_dir.hpp"
#include "data/kernel_regressions.hpp"
#include "scan/inventory.hpp"
#include "util/host_fs.hpp"

namespace passthru::kernel {

// What breaks passthrough on one kernel, and what to do about it.
struct KernelProblem
{
    std::string check; // "initramfs", "modules", "driver", "dkms", "regression"
    std::string what;
    std::string fix;
};

struct KernelVerdict
{
    std::string release;
    bool running = false;
    std::vector<KernelProblem> problems; // empty: passthrough will work
    std::vector<std::string> notes;      // what was not checked, and why

    bool ok() const { return problems.empty(); }
};

struct CheckInputs
{
    // The functions passthru passes (the newest active generation); empty when none was applied.
    std::vector<scan::PciAddress> functions;
    data::KernelRegressions regressions;
};

// Loads profiles/host/kernel-regressions.json (an /etc/passthru override first).

// The verdict for each of `releases`, in that order.
Result<std::vector<KernelVerdict>> check_kernels(const util::HostFs& fs, const scan::Inventory& inventory, const data::DataDir& data,
                                                 const CheckInputs& inputs, const std::vector<std::string>& releases);

} // namespace passthru::kernel
