// SPDX-License-Identifier: GPL-2.0-or-later
// Known passthrough regressions of kernel releases, as data
// (profiles/host/kernel-regressions.json, schema in docs/data.md): `passthru kernel
// check` names every installed kernel that falls in one of these ranges.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_dir.hpp"
#include "util/error.hpp"

namespace passthru::data {

// The numbers at the start of a kernel release: "6.8.12-12-pve" is {6, 8, 12, 12},
// "6.1.0-13-amd64" is {6, 1, 0, 13}; the first word that is not all digits ends it.
using ReleaseNumbers = std::vector<std::uint32_t>;
// nullopt when the release does not start with a number.
std::optional<ReleaseNumbers> release_numbers(std::string_view release);
// Compares as releases: missing trailing numbers count as 0 ("7.0" == "7.0.0-0").
int compare_releases(const ReleaseNumbers& a, const ReleaseNumbers& b);

struct KernelRegression
{
    std::string id;                      // "pve-6.8.12-12-vfio-group-permission"
    ReleaseNumbers from;                 // the first release that has it
    std::optional<ReleaseNumbers> fixed; // the first release that no longer has it; nullopt: not fixed yet
    std::string from_text;               // as the data spells them, for messages
    std::string fixed_text;              // empty when not fixed
    std::optional<std::string> flavour;  // the release must end in "-FLAVOUR" ("pve"); nullopt: any kernel
    std::optional<std::uint16_t> vendor; // only when a passed card is of this PCI vendor; nullopt: any card
    std::string symptom;                 // what breaks
    std::string fix;                     // what to do
    std::vector<std::string> sources;    // where it was reported

    // Whether `release` ("6.8.12-12-pve") is in [from, fixed) and has the flavour.
    bool covers(std::string_view release) const;
};

struct KernelRegressions
{
    std::vector<KernelRegression> rows; // in file order
};

// Parses the JSON text of profiles/host/kernel-regressions.json; `where` names the
// file in errors. Errc::usage with one line naming the file and the field.
Result<KernelRegressions> parse_kernel_regressions(std::string_view json_text, const std::string& where);

// profiles/host/kernel-regressions.json read through DATA (an /etc/passthru override first).
Result<KernelRegressions> load_kernel_regressions(const DataDir& data);

} // namespace passthru::data
