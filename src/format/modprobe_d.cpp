// SPDX-License-Identifier: GPL-2.0-or-later
#include "format/modprobe_d.hpp"

#include <algorithm>
#include <map>

#include "util/strings.hpp"

namespace passthru::format {

std::vector<ModprobeLine> find_modprobe_lines(std::string_view content, std::string_view command, std::string_view module,
                                              const std::optional<std::vector<std::string>>& value_words)
{
    const auto lines = util::split_lines(content);
    const std::string wanted = util::module_key(module);
    std::vector<ModprobeLine> found;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        ModprobeLine l;
        l.first = i;
        std::string text = lines[i];
        while (!text.empty() && text.back() == '\\' && i + 1 < lines.size()) {
            text.pop_back();
            text += lines[++i];
        }
        l.last = i;
        const auto t = util::trim(text);
        if (t.empty() || t.front() == '#') {
            continue;
        }
        l.words = util::split(t, " \t");
        if (l.words.size() < 2 || l.words[0] != command || util::module_key(l.words[1]) != wanted) {
            continue;
        }
        if (value_words && !std::equal(l.words.begin() + 2, l.words.end(), value_words->begin(), value_words->end())) {
            continue;
        }
        found.push_back(std::move(l));
    }
    return found;
}

std::optional<std::string> edit_modprobe_lines(std::string_view content, const std::vector<ModprobeEdit>& edits)
{
    std::map<std::size_t, const ModprobeEdit*> by_first;
    for (const auto& e : edits) {
        by_first[e.first] = &e;
    }
    const auto lines = util::split_lines(content);
    std::string after;
    bool any_content = false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (auto it = by_first.find(i); it != by_first.end()) {
            if (it->second->text) {
                after += *it->second->text + "\n";
                any_content = true;
            }
            i = it->second->last;
            continue;
        }
        const auto t = util::trim(lines[i]);
        any_content = any_content || (!t.empty() && t.front() != '#');
        after += lines[i] + "\n";
    }
    return any_content ? std::optional<std::string>(after) : std::nullopt;
}

} // namespace passthru::format
