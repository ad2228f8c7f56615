// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/global_words.hpp"

#include <algorithm>

#include "cli/commands.hpp"

namespace passthru::cli {
namespace {

std::string& words_storage()
{
    static std::string words;
    return words;
}

// Whether REST starts with a command's name that reads as a command to run:
// quoted (`quoted`: after a quote or a bracket), or followed by an option,
// the end or punctuation; "another passthru apply or rollback" is prose.
bool starts_command(std::string_view rest, bool quoted)
{
    return std::any_of(commands().begin(), commands().end(), [rest, quoted](const Command& c) {
        if (rest.substr(0, c.name.size()) != c.name) {
            return false;
        }
        const std::string_view after = rest.substr(c.name.size());
        if (after.empty() || std::string_view("'`\").,;:\n").find(after.front()) != std::string_view::npos) {
            return true;
        }
        return after.front() == ' ' && (quoted || after.substr(0, 2) == " -");
    });
}

} // namespace

void set_global_words(std::string words)
{
    words_storage() = std::move(words);
}

const std::string& global_words()
{
    return words_storage();
}

std::string with_global_words(std::string_view text)
{
    const std::string& words = global_words();
    if (words.empty()) {
        return std::string(text);
    }
    static constexpr std::string_view k_name = "passthru ";
    std::string out;
    std::size_t from = 0;
    for (std::size_t at = text.find(k_name); at != std::string_view::npos; at = text.find(k_name, at + 1)) {
        const bool quoted = at > 0 && std::string_view("'`\"(").find(text[at - 1]) != std::string_view::npos;
        const bool word_start = at == 0 || quoted || text[at - 1] == ' ';
        const std::size_t rest = at + k_name.size();
        if (word_start && starts_command(text.substr(rest), quoted)) {
            out.append(text.substr(from, rest - 1 - from));
            out.append(words);
            from = rest - 1;
        }
    }
    out.append(text.substr(from));
    return out;
}

} // namespace passthru::cli
