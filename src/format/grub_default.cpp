// SPDX-License-Identifier: GPL-2.0-or-later
#include "format/grub_default.hpp"

#include <string_view>

#include "util/strings.hpp"

namespace passthru::format {

GrubFile parse_grub_file(std::string path, std::string text)
{
    GrubFile f;
    f.path = std::move(path);
    f.text = std::move(text);
    f.lines = util::split_lines(f.text);
    f.trailing_newline = f.text.empty() || f.text.back() == '\n';
    for (std::size_t i = 0; i < f.lines.size(); ++i) {
        const std::string& line = f.lines[i];
        std::size_t pos = line.find_first_not_of(" \t");
        if (pos == std::string::npos || line[pos] == '#') {
            continue;
        }
        if (line.compare(pos, 7, "export ") == 0) {
            pos = line.find_first_not_of(" \t", pos + 7);
            if (pos == std::string::npos) {
                continue;
            }
        }
        std::string variable;
        for (const char* name : {"GRUB_CMDLINE_LINUX_DEFAULT=", "GRUB_CMDLINE_LINUX="}) {
            if (line.compare(pos, std::char_traits<char>::length(name), name) == 0) {
                variable = std::string(name, std::char_traits<char>::length(name) - 1);
                break;
            }
        }
        if (variable.empty()) {
            continue;
        }
        GrubAssignment a;
        a.line = i;
        const std::size_t value_start = pos + variable.size() + 1;
        a.prefix = line.substr(0, value_start);
        a.variable = variable;
        const std::string rest = line.substr(value_start);
        if (!rest.empty() && (rest[0] == '"' || rest[0] == '\'')) {
            a.quote = rest[0];
            std::size_t end = 1;
            while (end < rest.size() && rest[end] != a.quote) {
                if (a.quote == '"' && rest[end] == '\\') {
                    ++end;
                }
                ++end;
            }
            if (end < rest.size()) {
                a.value = rest.substr(1, end - 1);
                a.suffix = rest.substr(end + 1);
                a.parsed = true;
            }
        } else {
            const auto space = rest.find_first_of(" \t;");
            a.value = rest.substr(0, space);
            a.suffix = space == std::string::npos ? std::string() : rest.substr(space);
            a.parsed = a.value.find_first_of("\"'`\\") == std::string::npos;
        }
        f.assignments.push_back(std::move(a));
    }
    return f;
}

std::string GrubFile::join() const
{
    std::string out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        out += lines[i];
        if (i + 1 < lines.size() || trailing_newline) {
            out += '\n';
        }
    }
    return out;
}

} // namespace passthru::format
