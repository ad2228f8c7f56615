// SPDX-License-Identifier: GPL-2.0-or-later
// Kernel releases from which a fact about the host kernel holds, as data
// (profiles/host/kernel.json, schema in docs/data.md; the facts and their sources
// in docs/facts.md: iommu and modules). scan and plan compare the running kernel
// with these instead of carrying version numbers in code.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "data/data_dir.hpp"
#include "util/error.hpp"

namespace passthru::data {

using KernelVersion = std::pair<int, int>; // {major, minor}

struct KernelCutoffs
{
    KernelVersion vfio_virqfd_in_vfio;      // vfio_virqfd.ko is part of vfio.ko from here on
    KernelVersion intel_iommu_default_on;   // Proxmox VE kernels turn the Intel IOMMU on by default from here on
    KernelVersion sysfb_simple_framebuffer; // sysfb hands the boot framebuffer to simplefb/simpledrm from here on

    // true when the kernel is known and at least `cutoff`.
    static bool at_least(const std::optional<KernelVersion>& kernel, const KernelVersion& cutoff) { return kernel && *kernel >= cutoff; }
    // "6.2"
    static std::string text(const KernelVersion& version);
};

// Parses the JSON text of profiles/host/kernel.json; `where` names the file in
// errors. Errc::usage with one line naming the file and the field.
Result<KernelCutoffs> parse_kernel_cutoffs(std::string_view json_text, const std::string& where);

// profiles/host/kernel.json read through DATA and parsed as above: the CLI loads it once per
// command and hands it to scan, which keeps it in the Inventory for plan.
Result<KernelCutoffs> load_kernel_cutoffs(const DataDir& data);

} // namespace passthru::data
