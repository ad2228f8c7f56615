// SPDX-License-Identifier: GPL-2.0-or-later
// GPU models as data (profiles/gpus/*.json, schema passthru.gpu-profile/1 in
// docs/data.md): their ids, memory, PCI function layout, quirks and known
// issues. The CLI loads them once per command; plan compares a card with its
// model's row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_dir.hpp"
#include "util/error.hpp"

namespace passthru::data {

// One PCI function of a GPU model as its profile lists it.
struct ProfileFunction
{
    int function = 0;          // 0-7
    std::uint16_t class16 = 0; // class and subclass, 0x0403
    std::string role;          // "HDMI/DP audio"
};

// A known problem of a model (profiles/gpus `known_issues[]`): shown as a
// plan warning for every selected card of the model, with what to do.
struct KnownIssue
{
    std::string issue;                // what goes wrong
    std::string advice;               // what to do about it
    std::vector<std::string> sources; // public reports (at least one)
};

// What is known of how a model resets (profiles/gpus `reset`): scan's card state and
// verify say the fix it allows.
struct ResetFacts
{
    bool warm_reboot_resets = true; // false: a card that did not come back needs the host powered off
    std::string detail;             // what happens, one line
    std::string source;             // a public report (an https URL)
};

// Why a model likely needs a ROM file in its VM (profiles/gpus `rom_file`).
struct RomFileNeed
{
    std::string why;    // one line
    std::string source; // a public report (an https URL)
};

// A GPU model from profiles/gpus/*.json.
struct GpuProfile
{
    std::string file; // "rtx-2080-ti.json"
    std::string name;
    std::optional<double> vram_gib;
    std::vector<std::string> ids;           // "10de:1e07"
    std::vector<ProfileFunction> functions; // the layout of the card; empty: not given
    std::vector<std::string> quirks;
    std::vector<KnownIssue> known_issues;
    std::string vram_note; // e.g. memory-modded variants the ids cannot tell apart
    std::optional<ResetFacts> reset;
    std::optional<RomFileNeed> rom_file;
};

// Parses one profile; `where` names the file in the error (one line naming the
// file and the field, Errc::usage; a value that is not one line of text is a
// refusal, Errc::precondition).
Result<GpuProfile> parse_gpu_profile(std::string_view json_text, const std::string& where);

// Loads every profiles/gpus/*.json (overrides first). A profile that breaks the
// schema, or claims an id another profile claims, stops the command.
Result<std::vector<GpuProfile>> load_gpu_profiles(const DataDir& data);
// How many times load_gpu_profiles ran in this process (tests count loads).
std::size_t gpu_profile_loads() noexcept;
// The profile that lists `vendor_device` ("10de:1e07"); nullptr when none does.
const GpuProfile* find_profile(const std::vector<GpuProfile>& profiles, std::string_view vendor_device);

} // namespace passthru::data
