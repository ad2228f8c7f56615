// SPDX-License-Identifier: GPL-2.0-or-later
// The data passthru ships (profiles/ of the source tree), for tests that scan
// or plan a tree the way the commands do.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "data/data_dir.hpp"
#include "data/gpu_profile.hpp"
#include "data/gpu_vendors.hpp"
#include "data/kernel_cutoffs.hpp"
#include "plan/planner.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"
#include "util/host_fs.hpp"

namespace passthru::test {

// profiles/host/kernel.json, profiles/host/vendors.json and profiles/gpus/ as the
// commands load them (an override under the root first).
inline scan::ScanData shipped_scan_data(const util::HostFs& fs)
{
    const data::DataDir data(fs, std::nullopt);
    return {.cutoffs = data::load_kernel_cutoffs(data).value(),
            .vendors = data::load_gpu_vendors(data).value(),
            .gpu_profiles = data::load_gpu_profiles(data).value()};
}

// The request of `plan --vm VMID --gpus GPUS` (Proxmox VE), as the host-side
// planners' unit tests give it to them.
inline plan::Request vm_request(std::uint64_t vmid = 101, std::string gpus = "all")
{
    plan::Request request;
    request.vm = std::to_string(vmid);
    request.vmid = vmid;
    request.gpus = std::move(gpus);
    return request;
}

// A host of tests/fixtures/hosts opened and scanned as the commands scan it
// under --root; nullopt when it cannot be opened or scanned.
struct ScannedFixture
{
    util::HostFs fs;
    scan::Inventory inventory;
};
// Any tree (a fixture host, a FakeHost's directory) opened and scanned as the commands
// scan it under --root; nullopt when it cannot be opened or scanned.
inline std::optional<ScannedFixture> scan_root(const std::filesystem::path& root)
{
    auto fs = util::HostFs::open(root);
    if (!fs) {
        return std::nullopt;
    }
    util::CommandRunner runner(util::RunMode::record);
    auto inv = scan::scan_host(*fs, runner, shipped_scan_data(*fs));
    if (!inv) {
        return std::nullopt;
    }
    return ScannedFixture{std::move(*fs), std::move(*inv)};
}
inline std::optional<ScannedFixture> scan_fixture(const std::string& name)
{
    return scan_root(std::filesystem::path(PASSTHRU_FIXTURES_DIR) / "hosts" / name);
}

} // namespace passthru::test
