// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/term.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace passthru::util {

bool use_color(std::FILE* stream, ColorMode mode)
{
    if (mode == ColorMode::never) {
        return false;
    }
    const char* no_color = std::getenv("NO_COLOR");
    if (no_color != nullptr && no_color[0] != '\0') {
        return false;
    }
    if (mode == ColorMode::always) {
        return true;
    }
    const char* term = std::getenv("TERM");
    if (term != nullptr && std::strcmp(term, "dumb") == 0) {
        return false;
    }
    return ::isatty(::fileno(stream)) == 1;
}

std::string styled(std::string_view text, Style style, bool color)
{
    if (!color) {
        return std::string(text);
    }
    const char* code = "";
    switch (style) {
    case Style::bold:
        code = "1";
        break;
    case Style::red:
        code = "1;31";
        break;
    case Style::yellow:
        code = "1;33";
        break;
    case Style::green:
        code = "32";
        break;
    case Style::cyan:
        code = "36";
        break;
    case Style::dim:
        code = "2";
        break;
    }
    return "\x1b[" + std::string(code) + "m" + std::string(text) + "\x1b[0m";
}

std::size_t display_width(std::string_view text)
{
    std::size_t width = 0;
    bool in_escape = false;
    for (unsigned char c : text) {
        if (in_escape) {
            in_escape = c != 'm';
            continue;
        }
        if (c == 0x1b) {
            in_escape = true;
            continue;
        }
        if ((c & 0xc0) != 0x80) {
            ++width;
        }
    }
    return width;
}

std::string TextTable::render(std::string_view indent) const
{
    std::vector<std::size_t> widths;
    for (const auto& row : m_rows) {
        widths.resize(std::max(widths.size(), row.size()), 0);
        for (std::size_t i = 0; i < row.size(); ++i) {
            widths[i] = std::max(widths[i], display_width(row[i]));
        }
    }
    std::string out;
    for (const auto& row : m_rows) {
        std::string line(indent);
        for (std::size_t i = 0; i < row.size(); ++i) {
            line += row[i];
            if (i + 1 < row.size()) {
                line.append(widths[i] - display_width(row[i]) + 2, ' ');
            }
        }
        while (!line.empty() && line.back() == ' ') {
            line.pop_back();
        }
        out += line;
        out += '\n';
    }
    return out;
}

} // namespace passthru::util
