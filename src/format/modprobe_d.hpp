// SPDX-License-Identifier: GPL-2.0-or-later
// modprobe.d(5) files as text: where a directive sits, and the file with some
// of its lines replaced. What a host's configuration *means* is libkmod's job
// (plan/host/modprobe_config.*); this only finds, in one file, the line of a
// directive libkmod reported, so passthru can edit that line and nothing else
// (docs/facts.md: modules).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace passthru::format {

// One logical line: physical lines first..last, joined where a line ends in a
// backslash (as kmod joins them), split at blanks.
struct ModprobeLine
{
    std::size_t first = 0;
    std::size_t last = 0;
    std::vector<std::string> words;
};

// The logical lines of content that carry `command module ...`, module names
// compared with '-' and '_' alike. When value_words is given, the words after
// the module must equal them too (the value kmod reported for an options,
// install or blacklist line). Comments are never returned.
std::vector<ModprobeLine> find_modprobe_lines(std::string_view content, std::string_view command, std::string_view module,
                                              const std::optional<std::vector<std::string>>& value_words = std::nullopt);

// A replacement of the physical lines first..last (nullopt: the lines go).
struct ModprobeEdit
{
    std::size_t first = 0;
    std::size_t last = 0;
    std::optional<std::string> text;
};

// content with the edits applied; nullopt when nothing but comments and
// blank lines would be left.
std::optional<std::string> edit_modprobe_lines(std::string_view content, const std::vector<ModprobeEdit>& edits);

} // namespace passthru::format
