// SPDX-License-Identifier: GPL-2.0-or-later
// VM profiles as data (profiles/vm/<name>.json, schema passthru.vm-profile/1 in
// docs/data.md): the VM-level settings passthru plans for a guest that gets GPUs
// (machine, firmware, CPU, NUMA, memory) and the settings of a VM it creates.
// Parsed here; plan/vm/profile.* adds the checks that need the VM config's
// grammar and hands them to the loader.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_dir.hpp"
#include "data/schema.hpp"
#include "util/error.hpp"

namespace passthru::data {

struct VmProfile
{
    std::string name;
    std::string description;
    std::string ostype = "l26";
    std::string machine = "q35";
    std::string bios = "ovmf";
    std::string efitype = "4m";
    bool pre_enrolled_keys = false;
    std::string cpu_type = "host";
    std::vector<std::string> cpu_flags; // "+pcid"; only PVE's VM allow-list
    bool cpu_hidden = false;
    std::optional<std::string> hv_vendor_id;
    bool numa = true;
    bool affinity = true;
    std::optional<int> balloon = 0;
    std::optional<std::string> hugepages; // "2", "1024" or "any"
    // Memory advice: max(min, total VRAM * ram_per_vram + base), MiB.
    std::uint64_t memory_min_mib = 8192;
    double ram_per_vram = 0.0;
    std::uint64_t memory_base_mib = 0;
    // qm create
    int create_cores = 4;
    int create_sockets = 1;
    std::uint64_t create_memory_mib = 16384;
    int create_disk_gib = 64;
    std::string create_scsihw = "virtio-scsi-single";
    std::string create_disk_options;
    std::string create_net0 = "virtio,bridge=vmbr0";
    bool create_tpmstate = false;
};

// The checks a caller adds once the fields are read: DOC is the document, and a
// check that fails throws through DOC's fields (Field::fail), so its message
// names the file and the field like the loader's own.
using VmProfileCheck = std::function<void(const Field& doc, const VmProfile& profile)>;

// Parses a profile over VmProfile's defaults, then runs CHECK. Errc::parse with
// the offending field on bad input; a string with a line break or another
// control character is refused (Errc::precondition). `origin`, the file it came
// from, is named in every error.
Result<VmProfile> parse_vm_profile(std::string_view name, std::string_view json_text, std::string_view origin, const VmProfileCheck& check);
// Reads profiles/vm/<name>.json through the data directory and parses it as
// above. Errc::usage when NAME is no profile name or no such profile exists
// (with the available names as a hint).
Result<VmProfile> load_vm_profile(const DataDir& data, std::string_view name, const VmProfileCheck& check);

} // namespace passthru::data
