// SPDX-License-Identifier: GPL-2.0-or-later
// passthru's own data (templates/, profiles/) in layers: the one way a data
// file is read. The loaders of src/data/ parse what it reads; the CLI loads the
// data and hands it to scan and plan, and plan renders the templates.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::data {

// passthru's own data: templates/ and profiles/. Lookup order for a name:
// <root>/etc/passthru/<kind>/<name> (the admin's override, read through
// HostFs), then --data-dir, then the installed /usr/share/passthru, then the
// source tree (for running from a build directory).
class DataDir
{
public:
    DataDir(const util::HostFs& fs, std::optional<std::filesystem::path> data_dir);

    // kind is "templates" or "profiles"; name may contain '/' ("gpus/tu102.json").
    Result<std::string> read(std::string_view kind, std::string_view name) const;
    // Names (relative to kind/subdir) of the files in every layer, overrides first, de-duplicated.
    std::vector<std::string> list(std::string_view kind, std::string_view subdir) const;
    // Where a name was found (for messages).
    std::optional<std::string> origin(std::string_view kind, std::string_view name) const;
    // The one way a loader reads a data file: profiles/NAME's text and where it
    // was found ("profiles/NAME" when no layer says) go to PARSE(text, where),
    // whose Result is returned; a file that cannot be read is read()'s error.
    template<class Parse>
    auto load_profile(std::string_view name, Parse&& parse) const -> decltype(parse(std::string_view(), std::string()))
    {
        auto text = read("profiles", name);
        if (!text) {
            return tl::unexpected(text.error());
        }
        return std::forward<Parse>(parse)(*text, origin("profiles", name).value_or("profiles/" + std::string(name)));
    }

private:
    Result<std::string> read_uncached(std::string_view kind, std::string_view name) const;

    const util::HostFs& m_fs;
    // Shipped layers, after the override: --data-dir, the installed data,
    // and the repository's only for a binary run from its build tree.
    std::vector<std::filesystem::path> m_dirs;
    // Every file is read once per command, however many planners ask for it.
    mutable std::map<std::string, Result<std::string>> m_read_cache;
};

} // namespace passthru::data
