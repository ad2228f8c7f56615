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
