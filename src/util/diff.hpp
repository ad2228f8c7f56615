// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace passthru::util {

// Unified diff (3 lines of context) between two file contents, labelled with
// host paths: "--- /etc/kernel/cmdline" / "+++ /etc/kernel/cmdline (planned)".
// A missing side (file created or deleted) is labelled /dev/null. Returns an
// empty string when the contents are equal. The output applies with patch(1).
std::string unified_diff(const std::optional<std::string>& before, const std::optional<std::string>& after, std::string_view path);

} // namespace passthru::util
