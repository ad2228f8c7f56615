// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace passthru::util {

enum class ColorMode
{
    auto_detect, // colour when the stream is a TTY and NO_COLOR is unset
    always,
    never,
};

enum class Style
{
    bold,
    red,
    yellow,
    green,
    cyan,
    dim,
};

// Decides once whether a stream gets ANSI colours: never with NO_COLOR set
// (https://no-color.org) or TERM=dumb, and in auto mode only on a TTY.
bool use_color(std::FILE* stream, ColorMode mode);
std::string styled(std::string_view text, Style style, bool color);
// A line break, then `title` styled: how a section of human output begins.
// Built by appending: `"\n" + styled(...)` (a one-character literal before a
// temporary string) draws a false -Wrestrict from GCC 12 at -O2/-O3 (GCC bug
// 105651), and every heading needs this anyway.
std::string heading(std::string_view title, Style style, bool color);

// The one guard between host text and a terminal (a VM description
// or a device name must not erase lines, move the cursor or retitle the
// terminal). Returns `text` with every control character shown escaped:
// ESC as \e, CR as \r, the other C0 bytes and DEL as \xNN, the C1 controls
// (U+0080..U+009F, which some terminals obey) as \u00NN, the bidirectional
// controls and invisible characters (U+202E, U+200B, U+FEFF, ...) as \uNNNN,
// and every byte that is not part of well-formed UTF-8 (a Latin-1
// description, a sysfs name) as \xNN; newlines and tabs stay. styled() marks
// its colour sequences with a random per-process key that host text cannot
// know: with keep_color exactly those become colour (the key taken out),
// without it they go; a colour sequence spelt in host text is escaped.
// cli/main.cpp puts it between every human renderer and stdout/stderr;
// JSON output does not go through it (it stays exact).
std::string terminal_safe(std::string_view text, bool keep_color);
// The number of bytes at the end of `text` that may begin a sequence that
// terminal_safe() keeps (a colour sequence, a C1 control or another UTF-8
// character cut in two), so a stream can hold them back until the next
// chunk (at most 23).
std::size_t terminal_safe_pending(std::string_view text);
// A value as a one-line message shows it: terminal_safe() without colour, and
// newlines and tabs as \n and \t ("a\nb" for a value with a line break).
std::string shown_value(std::string_view value);

// A plain-text table: columns padded to their widest cell.
class TextTable
{
public:
    void add_row(std::vector<std::string> cells) { m_rows.push_back(std::move(cells)); }
    std::string render(std::string_view indent = "") const;

private:
    std::vector<std::vector<std::string>> m_rows;
};

// Display width of UTF-8 text (code points; good enough for our output).
std::size_t display_width(std::string_view text);

} // namespace passthru::util
