// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/saved_plan.hpp"

#include <map>

#include "plan/plan_json.hpp"
#include "util/strings.hpp"

namespace passthru::plan {

namespace {

using nlohmann::json;

// The entries of one array member keyed by one of their fields; a key that
// comes again goes to `repeated` (the map keeps only its first entry).
std::map<std::string, json> keyed(const json& doc, const char* member, const char* key, std::vector<json>* repeated = nullptr)
{
    std::map<std::string, json> out;
    for (const auto& e : doc.at(member)) {
        if (!out.emplace(e.at(key).dump(), e).second && repeated != nullptr) {
            repeated->push_back(e);
        }
    }
    return out;
}

std::string quoted_argv(const json& argv)
{
    std::vector<std::string> words;
    for (const auto& w : argv) {
        words.push_back(w.get<std::string>());
    }
    std::string out(1, '\'');
    out += util::join(words, " ");
    out += '\'';
    return out;
}

void compare_files(const json& saved, const json& derived, std::vector<std::string>& out)
{
    const auto want = keyed(derived, "files", "path");
    std::vector<json> repeated;
    const auto have = keyed(saved, "files", "path", &repeated);
    // passthru plans one change per file: a second entry for a path would be
    // applied after the first one that the comparison below checks.
    for (const auto& file : repeated) {
        out.push_back("it changes " + file.at("path").get<std::string>() + " more than once, which passthru never plans");
    }
    for (const auto& [key, file] : have) {
        const std::string path = file.at("path").get<std::string>();
        const auto it = want.find(key);
        if (it == want.end()) {
            out.push_back("it changes " + path + ", which passthru does not plan");
            continue;
        }
        for (const auto& [field, value] : file.items()) {
            if (!it->second.contains(field) || it->second.at(field) != value) {
                out.push_back(path + ": its " + field + " is not what passthru plans");
            }
        }
    }
    for (const auto& [key, file] : want) {
        if (have.count(key) == 0U) {
            out.push_back("it leaves out " + file.at("path").get<std::string>() + ", which passthru plans");
        }
    }
}

void compare_commands(const json& saved, const json& derived, std::vector<std::string>& out)
{
    const auto& have = saved.at("commands");
    const auto& want = derived.at("commands");
    for (std::size_t i = 0; i < have.size(); ++i) {
        if (i >= want.size() || have[i].at("argv") != want[i].at("argv")) {
            out.push_back("after-step " + std::to_string(i + 1) + " " + quoted_argv(have[i].at("argv")) + " is not what passthru plans"
                          + (i < want.size() ? " (" + quoted_argv(want[i].at("argv")) + ")" : ""));
        } else if (have[i] != want[i]) {
            out.push_back("after-step " + std::to_string(i + 1) + ": its reason is not what passthru plans");
        }
    }
    for (std::size_t i = have.size(); i < want.size(); ++i) {
        out.push_back("it leaves out after-step " + quoted_argv(want[i].at("argv")) + ", which passthru plans");
    }
}

} // namespace

std::vector<std::string> saved_plan_differences(const Plan& saved, const Plan& derived)
{
    const json s = plan_to_json(saved);
    const json d = plan_to_json(derived);
    std::vector<std::string> out;
    compare_files(s, d, out);
    compare_commands(s, d, out);
    for (const auto& [member, value] : s.items()) {
        if (member != "files" && member != "commands" && d.at(member) != value) {
            out.push_back("its " + member + " is not what passthru plans");
        }
    }
    return out;
}

} // namespace passthru::plan
