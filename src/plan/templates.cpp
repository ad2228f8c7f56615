// SPDX-License-Identifier: GPL-2.0-or-later
// mustache rendering of passthru's templates (templates/, read through
// data::DataDir) with JSON data: every value one line of text.
#include <kainjow/mustache.hpp>

#include "format/grammar.hpp"
#include "plan/planner.hpp"

namespace passthru::plan {

namespace {

kainjow::mustache::data to_mustache(const nlohmann::json& value)
{
    using kainjow::mustache::data;
    switch (value.type()) {
    case nlohmann::json::value_t::object: {
        data out{data::type::object};
        for (const auto& [key, item] : value.items()) {
            out.set(key, to_mustache(item));
        }
        return out;
    }
    case nlohmann::json::value_t::array: {
        data out{data::type::list};
        for (const auto& item : value) {
            out.push_back(to_mustache(item));
        }
        return out;
    }
    case nlohmann::json::value_t::string:
        return data{value.get<std::string>()};
    case nlohmann::json::value_t::boolean:
        return data{value.get<bool>()};
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
        return data{false};
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
    case nlohmann::json::value_t::binary:
        return data{value.dump()};
    }
    return data{false};
}

// The first string in VALUES that is not one line of text, named by its key
// path ("gpus", "args[2].token"): every template renders a line-based file, so
// a line break in a value would be a line of its own in the file.
std::optional<std::string> value_off_grammar(const nlohmann::json& value, const std::string& at)
{
    if (value.is_string()) {
        return format::invalid_value(format::Grammar::line_text, value.get_ref<const std::string&>(), "the value of " + at);
    }
    if (value.is_object()) {
        for (const auto& [key, item] : value.items()) {
            if (auto bad = value_off_grammar(item, at.empty() ? key : at + "." + key)) {
                return bad;
            }
        }
    }
    if (value.is_array()) {
        for (std::size_t i = 0; i < value.size(); ++i) {
            if (auto bad = value_off_grammar(value[i], at + "[" + std::to_string(i) + "]")) {
                return bad;
            }
        }
    }
    return std::nullopt;
}

} // namespace

Result<std::string> render_template(const data::DataDir& data, std::string_view name, const nlohmann::json& values)
{
    PASSTHRU_TRY_ASSIGN(const auto text, data.read("templates", name));
    kainjow::mustache::mustache tmpl{text};
    if (!tmpl.is_valid()) {
        return fail(Errc::parse, "template " + data.origin("templates", name).value_or(std::string(name)) + ": " + tmpl.error_message());
    }
    // Configuration files, not HTML: values go in verbatim, so each must be
    // one line of text (format/grammar.hpp) wherever it came from.
    if (auto bad = value_off_grammar(values, "")) {
        return tl::unexpected(
            Error(Errc::precondition, "will not render " + data.origin("templates", name).value_or(std::string(name)) + ": " + *bad)
                .with_hint("the value comes from the host or the data files (profiles): fix its source and plan again"));
    }
    tmpl.set_custom_escape([](const std::string& s) { return s; });
    std::string out = tmpl.render(to_mustache(values));
    if (!tmpl.is_valid()) {
        return fail(Errc::parse, "template " + std::string(name) + ": " + tmpl.error_message());
    }
    // Sections that render nothing leave blank lines behind: keep at most one
    // blank line in a row and none at the end.
    std::string tidy;
    std::size_t blank_run = 0;
    std::size_t start = 0;
    while (start < out.size()) {
        auto end = out.find('\n', start);
        if (end == std::string::npos) {
            end = out.size();
        }
        const std::string_view line(out.data() + start, end - start);
        const bool blank = line.find_first_not_of(" \t") == std::string_view::npos;
        blank_run = blank ? blank_run + 1 : 0;
        if (blank_run <= 1) {
            tidy.append(line);
            tidy += '\n';
        }
        start = end + 1;
    }
    while (tidy.size() >= 2 && tidy[tidy.size() - 1] == '\n' && tidy[tidy.size() - 2] == '\n') {
        tidy.pop_back();
    }
    return tidy;
}

std::optional<std::string> render_or_refuse(const PlanContext& ctx, Plan& plan, std::string_view name, const nlohmann::json& values)
{
    auto text = render_template(ctx.data, name, values);
    if (!text) {
        plan.refusals.push_back({text.error().what(), text.error().hints()});
        return std::nullopt;
    }
    return std::move(*text);
}

} // namespace passthru::plan
