// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/diff.hpp"

#include <dtl/dtl.hpp>
#include <sstream>
#include <vector>

namespace passthru::util {

namespace {

struct Lines
{
    std::vector<std::string> lines;
    bool missing_final_newline = false;
};

Lines to_lines(const std::optional<std::string>& text)
{
    Lines out;
    if (!text) {
        return out;
    }
    std::size_t start = 0;
    while (start < text->size()) {
        const auto pos = text->find('\n', start);
        if (pos == std::string::npos) {
            out.lines.push_back(text->substr(start));
            out.missing_final_newline = true;
            break;
        }
        out.lines.push_back(text->substr(start, pos - start));
        start = pos + 1;
    }
    return out;
}

std::string range(long long start, long long count)
{
    // GNU diff: an empty range is written as the line before it, ",0".
    if (count == 0) {
        return std::to_string(start == 0 ? 0 : start - 1) + ",0";
    }
    if (count == 1) {
        return std::to_string(start);
    }
    return std::to_string(start) + "," + std::to_string(count);
}

} // namespace

std::string unified_diff(const std::optional<std::string>& before, const std::optional<std::string>& after, std::string_view path)
{
    if (before == after) {
        return {};
    }
    const Lines a = to_lines(before);
    const Lines b = to_lines(after);

    // The last line of a file without a final newline differs from the same
    // text with one; mark it so that the diff and patch(1) see the change.
    auto mark = [](const Lines& l) {
        std::vector<std::string> v = l.lines;
        if (l.missing_final_newline && !v.empty()) {
            v.back() += '\x01';
        }
        return v;
    };
    dtl::Diff<std::string, std::vector<std::string>> diff(mark(a), mark(b));
    diff.compose();
    diff.composeUnifiedHunks();

    std::ostringstream out;
    out << "--- " << (before ? std::string(path) : std::string("/dev/null")) << '\n';
    out << "+++ " << (after ? std::string(path) + " (planned)" : std::string("/dev/null")) << '\n';
    auto emit = [&out](char prefix, std::string line) {
        const bool no_newline = !line.empty() && line.back() == '\x01';
        if (no_newline) {
            line.pop_back();
        }
        out << prefix << line << '\n';
        if (no_newline) {
            out << "\\ No newline at end of file\n";
        }
    };
    for (const auto& hunk : diff.getUniHunks()) {
        // dtl counts from the first common line; recompute GNU-style ranges.
        long long a_count = 0;
        long long b_count = 0;
        for (const auto* part : {&hunk.common[0], &hunk.change, &hunk.common[1]}) {
            for (const auto& elem : *part) {
                switch (elem.second.type) {
                case dtl::SES_COMMON:
                    ++a_count;
                    ++b_count;
                    break;
                case dtl::SES_DELETE:
                    ++a_count;
                    break;
                case dtl::SES_ADD:
                    ++b_count;
                    break;
                }
            }
        }
        out << "@@ -" << range(hunk.a, a_count) << " +" << range(hunk.c, b_count) << " @@\n";
        for (const auto* part : {&hunk.common[0], &hunk.change, &hunk.common[1]}) {
            for (const auto& elem : *part) {
                const char prefix = elem.second.type == dtl::SES_ADD ? '+' : elem.second.type == dtl::SES_DELETE ? '-' : ' ';
                emit(prefix, elem.first);
            }
        }
    }
    return out.str();
}

} // namespace passthru::util
