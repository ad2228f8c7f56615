// SPDX-License-Identifier: GPL-2.0-or-later
// The kernel-argument assignments of GRUB's shell fragments, /etc/default/grub
// and /etc/default/grub.d/*.cfg, which grub-mkconfig sources with sh
// (docs/facts.md: boot-loader). Only GRUB_CMDLINE_LINUX[_DEFAULT]= lines are
// read; a value passthru cannot read back exactly as sh would (a quote it
// does not close, an unquoted value with quotes or backslashes) is kept but
// marked as not parsed, so nothing edits it. Lines are kept as they are, so
// join() gives the text back byte for byte.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace passthru::format {

struct GrubAssignment
{
    std::size_t line = 0;
    std::string prefix;   // "GRUB_CMDLINE_LINUX_DEFAULT=" with any leading blanks/export
    std::string variable; // GRUB_CMDLINE_LINUX_DEFAULT
    char quote = 0;       // '"', '\'' or 0
    std::string value;    // inside the quotes
    std::string suffix;   // after the closing quote
    bool parsed = false;
};

struct GrubFile
{
    std::string path;
    std::string text;
    std::vector<std::string> lines;
    bool trailing_newline = true;
    std::vector<GrubAssignment> assignments;

    // The lines again (after edits to them), with the file's final newline or not.
    std::string join() const;
};

// Finds the GRUB_CMDLINE_LINUX[_DEFAULT]= assignments of a shell fragment.
GrubFile parse_grub_file(std::string path, std::string text);

} // namespace passthru::format
