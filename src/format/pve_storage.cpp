// SPDX-License-Identifier: GPL-2.0-or-later
#include "format/pve_storage.hpp"

#include "util/lex.hpp"
#include "util/strings.hpp"

namespace passthru::format::pve {

namespace {

namespace lex = util::lex;

// storage.cfg (pve-common SectionConfig): a section header "TYPE: ID" ([a-z0-9]+:\s*(\S+)\s*); the ID.
std::optional<std::string> storage_header(std::string_view line)
{
    const std::size_t type = lex::span(line, 0, [](char c) { return lex::is_lower(c) || lex::is_digit(c); });
    if (type == 0 || type >= line.size() || line[type] != ':') {
        return std::nullopt;
    }
    const std::string_view id = util::trim(line.substr(type + 1));
    if (id.empty() || lex::span(id, 0, [](char c) { return !lex::is_space(c); }) != id.size()) {
        return std::nullopt;
    }
    return std::string(id);
}

// storage.cfg: an indented "content LIST" property (\s+content\s+(\S+)\s*); the LIST.
std::optional<std::string> storage_content(std::string_view line)
{
    if (lex::eat_span(line, lex::is_space) == 0 || !lex::eat(line, "content") || lex::eat_span(line, lex::is_space) == 0) {
        return std::nullopt;
    }
    const std::string_view list = util::trim(line);
    if (list.empty() || lex::span(list, 0, [](char c) { return !lex::is_space(c); }) != list.size()) {
        return std::nullopt;
    }
    return std::string(list);
}

} // namespace

std::optional<std::string> first_images_storage(std::string_view text)
{
    std::optional<std::string> current;
    for (const auto& line : util::split_lines(text)) {
        if (auto id = storage_header(line)) {
            current = std::move(id);
        } else if (auto list = current ? storage_content(line) : std::nullopt) {
            for (const auto& c : util::split(*list, ",")) {
                if (c == "images") {
                    return current;
                }
            }
        } else if (util::trim(line).empty()) {
            current.reset();
        }
    }
    return std::nullopt;
}

} // namespace passthru::format::pve
