// SPDX-License-Identifier: GPL-2.0-or-later
// Which --root trees passthru writes: not the files a package installed (the
// sample host under the data directory, PASSTHRU_INSTALLED_DATA_DIR, where
// the next package upgrade would overwrite them or find them changed), and
// not a tree it cannot write (HostFs::write_denied: a read-only mount, or a
// root directory, etc/ or var/ this user may not write). The live host (/)
// is left to require_root.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cli/commands.hpp"

namespace passthru::cli {

// Why passthru will not write under ctx's root ("... is the installed
// sample ..."), or nullopt when it may.
std::optional<std::string> unwritable_root(const Context& ctx);

// The hint for such a root: copy it somewhere writable first.
std::string copy_root_hint(const Context& ctx);

// Throws Errc::usage (exit 2, nothing written) when unwritable_root says why.
void require_writable_root(const Context& ctx, std::string_view command);

} // namespace passthru::cli
