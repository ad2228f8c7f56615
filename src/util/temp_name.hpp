// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string>
#include <string_view>

namespace passthru::util {

// The one name pattern of HostFs::write_file_atomic's temporary files: the
// file ".BASE.passthru-N" (N: 1 to 6 decimal digits) next to BASE. A kill -9
// between writing it and renaming it onto BASE leaves it behind; because the
// name follows from the path alone, recovery and rollback find and remove it
// for every path the journal recorded, and rmdir then
// succeeds on a directory apply created for it.
std::string temp_name(std::string_view base, unsigned number);
bool is_temp_name(std::string_view entry, std::string_view base);

} // namespace passthru::util
