// SPDX-License-Identifier: GPL-2.0-or-later
// The paths passthru's planners write (plan/paths.hpp).
#include "plan/paths.hpp"

#include <algorithm>

#include "scan/boot_loader.hpp"

namespace passthru::plan {

const std::vector<std::string_view>& written_files()
{
    static const std::vector<std::string_view> files = [] {
        std::vector<std::string_view> out(k_written_files.begin(), k_written_files.end());
        for (const auto& loader : scan::boot_loaders()) {
            if (!loader.cmdline_file.empty() && std::find(out.begin(), out.end(), loader.cmdline_file) == out.end()) {
                out.push_back(loader.cmdline_file);
            }
        }
        return out;
    }();
    return files;
}

bool is_written_path(std::string_view path)
{
    const auto& files = written_files();
    return std::find(files.begin(), files.end(), path) != files.end()
           || std::any_of(k_written_dirs.begin(), k_written_dirs.end(), [&](const WrittenDir& d) { return d.holds(path); });
}

} // namespace passthru::plan
