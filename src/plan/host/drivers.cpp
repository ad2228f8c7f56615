// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/host/drivers.hpp"

#include "plan/host/host_detail.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

std::string version_text(const std::pair<int, int>& v)
{
    return std::to_string(v.first) + "." + std::to_string(v.second);
}

} // namespace

HostDriverData drivers_for_kernel(const util::HostFs& fs, const std::optional<std::string>& kernel_release,
                                  const std::optional<std::pair<int, int>>& kernel_version, HostDriverData data,
                                  std::vector<std::string>& why)
{
    const std::string kver = kernel_release.value_or("?");
    std::vector<HostDriver> kept;
    for (auto& d : data.drivers) {
        if (!d.since_kernel) {
            kept.push_back(std::move(d));
            continue;
        }
        bool present = false;
        if (const auto has = target_has_module(fs, kernel_release.value_or(""), d.module)) {
            present = *has;
            why.push_back((present ? "includes " : "leaves out ") + d.module + ": the module tree of kernel " + kver
                          + (present ? " has it" : " does not have it") + " (asked through libkmod)");
        } else if (kernel_version) {
            present = *kernel_version >= *d.since_kernel;
            why.push_back((present ? "includes " : "leaves out ") + d.module + ": no module tree of kernel " + kver
                          + " to ask, and the module exists from Linux " + version_text(*d.since_kernel) + " on");
        } else {
            present = true;
            why.push_back("includes " + d.module + ": the target kernel is unknown, and the lines are harmless where the module is absent");
        }
        if (present) {
            kept.push_back(std::move(d));
        }
    }
    data.drivers = std::move(kept);
    return data;
}

bool driver_claims(const HostDriver& driver, const scan::PciDevice& device)
{
    if (!driver.claims_something) {
        return false;
    }
    if (driver.vendor && device.vendor != driver.vendor) {
        return false;
    }
    if (driver.kind == FunctionKind::display && !device.is_display()) {
        return false;
    }
    return !driver.class16 || device.class16() == driver.class16;
}

} // namespace passthru::plan::detail
