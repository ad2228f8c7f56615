// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/json.hpp"

namespace passthru::util {

Result<nlohmann::json> parse_json(std::string_view text, const std::string& what, Errc invalid)
{
    using nlohmann::json;
    bool too_deep = false;
    // The parser itself is iterative; the callback sees each container as it
    // opens, with the number of containers around it, and a container it
    // declines is skipped without being built.
    const json::parser_callback_t bound = [&too_deep](int depth, json::parse_event_t event, json& /*parsed*/) {
        const bool opens = event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
        if (opens && depth >= k_json_max_depth) {
            too_deep = true;
            return false;
        }
        return true;
    };
    json doc = json::parse(text, bound, false);
    if (too_deep) {
        return fail(Errc::precondition, "refused: " + what + " is nested deeper than " + std::to_string(k_json_max_depth) + " levels");
    }
    if (doc.is_discarded()) {
        return fail(invalid, what + ": not a JSON document");
    }
    return doc;
}

} // namespace passthru::util
