// SPDX-License-Identifier: GPL-2.0-or-later
// NVSwitch generations as data (profiles/host/nvswitch.json, schema
// passthru.nvswitch/1 in docs/data.md): which switch ids belong to which
// generation and the shapes of VM NVIDIA's full-passthrough model supports.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/data_dir.hpp"
#include "util/error.hpp"

namespace passthru::data {

// The shapes of a VM that NVIDIA's full-passthrough model supports (docs/facts.md: nvswitch).
enum class FabricShape
{
    whole_board, // every GPU and every NVSwitch of the host: NVLink in the guest
    single_gpu,  // one GPU, no switch: no NVLink
};

// One NVSwitch generation.
struct NvswitchGeneration
{
    std::string name;             // "third-generation NVSwitch (HGX H100/H200)"
    std::vector<std::string> ids; // "10de:22a3"
    std::vector<FabricShape> shapes;
    std::vector<std::string> guest_needs; // one note each
};

// Errc::usage naming `origin` and the field when the file breaks the schema.
Result<std::vector<NvswitchGeneration>> parse_nvswitch_generations(std::string_view text, const std::string& origin);
// profiles/host/nvswitch.json read through DATA and parsed as above (plan asks
// for it on an NVSwitch system only).
Result<std::vector<NvswitchGeneration>> load_nvswitch_generations(const DataDir& data);

} // namespace passthru::data
