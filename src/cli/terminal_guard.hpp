// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdio>

namespace passthru::cli {

// Puts util::terminal_safe() between everything the command prints to
// `stream` (stdout or stderr) and its file descriptor: the stream is replaced
// by one that escapes control characters in host text on their way out, so
// every human renderer goes through the one guard. keep_color lets the
// tool's own colour through (util::styled() marks it with a key host text
// cannot know). Called by main for stderr before anything is printed and
// again once --color is known (which only sets keep_color), and for stdout
// unless the output is JSON (it stays exact). A write to the guarded stderr
// flushes stdout first, so that both streams read in order in one pipe.
void guard_stream(std::FILE*& stream, bool keep_color);

} // namespace passthru::cli
