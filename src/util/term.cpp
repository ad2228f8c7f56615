// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/term.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>

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

namespace {

// The colour sequences styled() writes, and the only ones terminal_safe() keeps.
constexpr std::array<std::string_view, 7> kSgrCodes{"1", "1;31", "1;33", "32", "36", "2", "0"};
constexpr std::size_t kKeySize = 16;
// "\x1b" KEY "[1;31m": what styled() writes for its longest colour.
constexpr std::size_t kMaxSgr = 1 + kKeySize + 6;

// The process's colour key: 16 random hex digits that styled() writes
// between ESC and "[" and terminal_safe() takes out again. Host text cannot
// know it, so a colour sequence of the tool's own spelling inside a VM name
// or a file's content is shown escaped like any other.
const std::string& color_key()
{
    static const std::string key = [] {
        static constexpr char kDigits[] = "0123456789abcdef";
        std::random_device random;
        std::string out;
        while (out.size() < kKeySize) {
            unsigned bits = random();
            for (int k = 0; k < 8 && out.size() < kKeySize; ++k, bits >>= 4U) {
                out += kDigits[bits & 0xfU];
            }
        }
        return out;
    }();
    return key;
}

std::string_view sgr_code(Style style)
{
    switch (style) {
    case Style::bold:
        return kSgrCodes[0];
    case Style::red:
        return kSgrCodes[1];
    case Style::yellow:
        return kSgrCodes[2];
    case Style::green:
        return kSgrCodes[3];
    case Style::cyan:
        return kSgrCodes[4];
    case Style::dim:
        return kSgrCodes[5];
    }
    return kSgrCodes[6];
}

// The length of the colour sequence of styled() (ESC, the key, "[CODEm")
// that starts text, or 0; its CODE in `code`.
std::size_t own_sgr_at(std::string_view text, std::string_view& code)
{
    const std::string& key = color_key();
    if (text.size() < 1 + key.size() || text[0] != '\x1b' || text.substr(1, key.size()) != key) {
        return 0;
    }
    const std::string_view rest = text.substr(1 + key.size());
    for (const auto c : kSgrCodes) {
        const std::size_t n = c.size() + 2;
        if (rest.size() >= n && rest[0] == '[' && rest.substr(1, c.size()) == c && rest[n - 1] == 'm') {
            code = c;
            return 1 + key.size() + n;
        }
    }
    return 0;
}

// Bidirectional controls and characters that take no room (a zero-width
// space, a word joiner, a byte-order mark): they reorder or hide what is
// shown, so a name can read as another.
bool invisible_or_bidi(std::uint32_t cp)
{
    return cp == 0x061c || cp == 0x180e || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e)
           || (cp >= 0x2060 && cp <= 0x206f) || cp == 0xfeff;
}

std::uint32_t code_point(std::string_view text, std::size_t i, std::size_t n)
{
    const auto at = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(text[i + k])); };
    std::uint32_t cp = n == 2 ? at(0) & 0x1fU : n == 3 ? at(0) & 0x0fU : at(0) & 0x07U;
    for (std::size_t k = 1; k < n; ++k) {
        cp = (cp << 6U) | (at(k) & 0x3fU);
    }
    return cp;
}

// The length of the well-formed UTF-8 sequence that starts at text[i]
// (Unicode's table of well-formed byte sequences: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0 when the bytes there are not one.
std::size_t utf8_length(std::string_view text, std::size_t i)
{
    const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const unsigned char c = at(0);
    std::size_t n = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;
    if (c < 0x80) {
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (i + n > text.size() || at(1) < lo || at(1) > hi) {
        return 0;
    }
    for (std::size_t k = 2; k < n; ++k) {
        if (at(k) < 0x80 || at(k) > 0xbf) {
            return 0;
        }
    }
    return n;
}

// The number of bytes at the end of text that begin a multi-byte UTF-8
// sequence whose rest has not come yet (0-3).
std::size_t utf8_cut_at_end(std::string_view text)
{
    for (std::size_t k = 1; k <= 3 && k <= text.size(); ++k) {
        const auto c = static_cast<unsigned char>(text[text.size() - k]);
        if (c >= 0x80 && c <= 0xbf) {
            continue; // a continuation byte: look further back
        }
        const std::size_t need = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
        return need > k ? k : 0;
    }
    return 0;
}

void append_hex(std::string& out, const char* prefix, unsigned value)
{
    static constexpr char kDigits[] = "0123456789abcdef";
    out += prefix;
    out += kDigits[(value >> 4U) & 0xfU];
    out += kDigits[value & 0xfU];
}

} // namespace

std::string heading(std::string_view title, Style style, bool color)
{
    std::string out(1, '\n');
    out += styled(title, style, color);
    return out;
}

std::string styled(std::string_view text, Style style, bool color)
{
    if (!color) {
        return std::string(text);
    }
    const std::string& key = color_key();
    std::string out;
    out.reserve(text.size() + 2 * kMaxSgr);
    out += '\x1b';
    out += key;
    out += '[';
    out += sgr_code(style);
    out += 'm';
    out += text;
    out += '\x1b';
    out += key;
    out += "[0m";
    return out;
}

std::string shown_value(std::string_view value)
{
    std::string shown = terminal_safe(value, false);
    for (std::size_t at = shown.find('\n'); at != std::string::npos; at = shown.find('\n', at)) {
        shown.replace(at, 1, "\\n");
    }
    for (std::size_t at = shown.find('\t'); at != std::string::npos; at = shown.find('\t', at)) {
        shown.replace(at, 1, "\\t");
    }
    return shown;
}

std::string terminal_safe(std::string_view text, bool keep_color)
{
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == 0x1b) {
            std::string_view code;
            if (const std::size_t n = own_sgr_at(text.substr(i), code); n != 0) {
                if (keep_color) {
                    out += "\x1b[";
                    out += code;
                    out += 'm';
                }
                i += n - 1;
                continue;
            }
        }
        if (c >= 0x80) {
            const std::size_t n = utf8_length(text, i);
            if (n == 0) {
                append_hex(out, "\\x", c); // not UTF-8: the byte, shown
            } else if (c == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
                append_hex(out, "\\u00", static_cast<unsigned char>(text[i + 1])); // a C1 control
            } else if (const std::uint32_t cp = code_point(text, i, n); invisible_or_bidi(cp)) {
                append_hex(out, "\\u", cp >> 8U); // U+202E as \u202e
                append_hex(out, "", cp & 0xffU);
            } else {
                out.append(text.substr(i, n));
            }
            i += n == 0 ? 0 : n - 1;
        } else if (c == 0x1b) {
            out += "\\e";
        } else if (c == '\r') {
            out += "\\r";
        } else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
            append_hex(out, "\\x", c);
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

std::size_t terminal_safe_pending(std::string_view text)
{
    const std::size_t from = text.size() > kMaxSgr ? text.size() - kMaxSgr : 0;
    const auto esc = text.find_last_of('\x1b');
    if (esc != std::string_view::npos && esc >= from) {
        const std::string& key = color_key();
        const auto tail = text.substr(esc + 1);
        bool open = false;
        if (tail.size() <= key.size()) {
            open = key.compare(0, tail.size(), tail) == 0;
        } else if (tail.substr(0, key.size()) == key) {
            const auto rest = tail.substr(key.size());
            open = rest[0] == '[' && rest.substr(1).find_first_not_of("0123456789;") == std::string_view::npos;
        }
        if (open) {
            return tail.size() + 1;
        }
    }
    return utf8_cut_at_end(text);
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
