// SPDX-License-Identifier: GPL-2.0-or-later
// A journal manifest (/var/lib/passthru/generations/<n>/manifest.json, which
// rollback and recovery act on): any document is a manifest or one error,
// never a crash; a manifest that loads prints as JSON that loads to the same,
// and one that passes the checks rollback makes (apply/manifest_check)
// names only normalised paths passthru writes.
#include <nlohmann/json.hpp>

#include "apply/journal.hpp"
#include "apply/manifest_check.hpp"
#include "fuzz.hpp"

using namespace passthru;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto doc = nlohmann::json::parse(fuzz::text_of(data, size), nullptr, false);
    if (doc.is_discarded()) {
        return 0;
    }
    if (const auto manifest = apply::manifest_from_json(doc)) {
        const auto printed = apply::to_json(*manifest);
        const auto again = apply::manifest_from_json(printed);
        fuzz::require(again.has_value() && apply::to_json(*again) == printed, "a loaded manifest round-trips");
        if (apply::check_manifest(*manifest, apply::allowed_owners(0, 0))) {
            for (const auto& f : manifest->files) {
                fuzz::require(apply::is_passthru_path(f.path) && f.path.find("/../") == std::string::npos && (f.mode & 07002) == 0,
                              "a manifest that passes the checks names only passthru's files and modes");
            }
        }
    }
    return 0;
}
