// SPDX-License-Identifier: GPL-2.0-or-later
// GPU profiles (profiles/gpus/*.json): loading, schema checks and lookup by
// vendor:device. The schema is in docs/data.md.
#include <algorithm>
#include <array>
#include <map>

#include "data/schema.hpp"
#include "format/grammar.hpp"
#include "plan/common.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

constexpr std::string_view k_schema = "passthru.gpu-profile/1";

std::size_t g_loads = 0;

// A field that breaks the schema: its path in the document and what is wrong.
[[noreturn]] void bad_field(const std::string& field, const std::string& what)
{
    throw data::SchemaError(field + " " + what);
}

// Fields earlier releases shipped and never used: accepted and ignored, so a
// copy of an old profile under /etc/passthru keeps loading.
constexpr std::array<std::string_view, 4> k_retired = {"architecture", "chip", "tdp_watts", "vendor"};
constexpr std::array<std::string_view, 9> k_fields = {"schema",    "name",   "ids",          "vram_gib", "vram_note",
                                                      "functions", "quirks", "known_issues", "sources"};

bool lower_hex(std::string_view text, std::size_t digits)
{
    return text.size() == digits && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string nonempty_string(const nlohmann::json& j, const std::string& field)
{
    if (!j.is_string() || j.get<std::string>().empty()) {
        bad_field(field, "must be a non-empty string");
    }
    // Every string of a profile may reach a generated file (the name goes into
    // passthru-vfio.conf and the VM config), and those files are line-based.
    auto text = j.get<std::string>();
    if (auto bad = format::invalid_value(format::Grammar::line_text, text, "")) {
        // A value that would break a generated file's grammar (format/grammar.hpp) is a refusal, not a typo.
        throw data::SchemaError(field + " " + bad->substr(1), true,
                                "a profile's values go into configuration files: fix the profile and plan again");
    }
    return text;
}

std::vector<std::string> string_list(const nlohmann::json& j, const std::string& field)
{
    if (!j.is_array()) {
        bad_field(field, "must be a list of strings");
    }
    std::vector<std::string> out;
    out.reserve(j.size());
    for (std::size_t i = 0; i < j.size(); ++i) {
        out.push_back(nonempty_string(j[i], field + "[" + std::to_string(i) + "]"));
    }
    return out;
}

// "10de:1e07": the vendor:device of function 0, lower-case hex.
std::vector<std::string> parse_ids(const nlohmann::json& j)
{
    if (!j.is_array() || j.empty()) {
        bad_field("ids", "must be a non-empty list of vendor:device ids (\"10de:1e07\")");
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < j.size(); ++i) {
        const std::string at = "ids[" + std::to_string(i) + "]";
        const std::string id = j[i].is_string() ? j[i].get<std::string>() : std::string();
        if (id.size() != 9 || id[4] != ':' || !lower_hex(std::string_view(id).substr(0, 4), 4)
            || !lower_hex(std::string_view(id).substr(5), 4)) {
            bad_field(at, "must be a vendor:device id in lower-case hex (\"10de:1e07\")");
        }
        if (std::find(out.begin(), out.end(), id) != out.end()) {
            bad_field(at, id + " is listed twice");
        }
        out.push_back(id);
    }
    return out;
}

ProfileFunction parse_function(const nlohmann::json& j, const std::string& at)
{
    if (!j.is_object()) {
        bad_field(at, "must be an object with function, class and role");
    }
    for (const auto& item : j.items()) {
        // "id" was documentation in earlier releases: accepted and ignored.
        if (item.key() != "function" && item.key() != "class" && item.key() != "role" && item.key() != "id") {
            bad_field(at + "." + item.key(), "is not a field of a function (function, class, role)");
        }
    }
    ProfileFunction f;
    if (!j.contains("function") || !j["function"].is_number_integer() || j["function"].get<int>() < 0 || j["function"].get<int>() > 7) {
        bad_field(at + ".function", "must be the PCI function number, 0 to 7");
    }
    f.function = j["function"].get<int>();
    const std::string cls = j.contains("class") && j["class"].is_string() ? j["class"].get<std::string>() : std::string();
    if (!lower_hex(cls, 4)) {
        bad_field(at + ".class", "must be the PCI class and subclass, 4 lower-case hex digits (\"0403\")");
    }
    f.class16 = static_cast<std::uint16_t>(std::stoul(cls, nullptr, 16));
    f.role = nonempty_string(j.contains("role") ? j["role"] : nlohmann::json(), at + ".role");
    return f;
}

std::vector<ProfileFunction> parse_functions(const nlohmann::json& j)
{
    if (!j.is_array() || j.empty()) {
        bad_field("functions", "must be a non-empty list of the card's PCI functions");
    }
    std::vector<ProfileFunction> out;
    for (std::size_t i = 0; i < j.size(); ++i) {
        auto f = parse_function(j[i], "functions[" + std::to_string(i) + "]");
        if (std::any_of(out.begin(), out.end(), [&](const ProfileFunction& o) { return o.function == f.function; })) {
            bad_field("functions[" + std::to_string(i) + "].function", "function " + std::to_string(f.function) + " is listed twice");
        }
        out.push_back(std::move(f));
    }
    if (std::none_of(out.begin(), out.end(), [](const ProfileFunction& f) { return f.function == 0; })) {
        bad_field("functions", "must list function 0 (the function the ids name)");
    }
    std::sort(out.begin(), out.end(), [](const ProfileFunction& a, const ProfileFunction& b) { return a.function < b.function; });
    return out;
}

KnownIssue parse_known_issue(const nlohmann::json& j, const std::string& at)
{
    if (!j.is_object()) {
        bad_field(at, "must be an object with issue, advice and sources");
    }
    for (const auto& item : j.items()) {
        if (item.key() != "issue" && item.key() != "advice" && item.key() != "sources") {
            bad_field(at + "." + item.key(), "is not a field of a known issue (issue, advice, sources)");
        }
    }
    KnownIssue k;
    k.issue = nonempty_string(j.contains("issue") ? j["issue"] : nlohmann::json(), at + ".issue");
    k.advice = nonempty_string(j.contains("advice") ? j["advice"] : nlohmann::json(), at + ".advice");
    k.sources = string_list(j.contains("sources") ? j["sources"] : nlohmann::json(), at + ".sources");
    if (k.sources.empty()) {
        bad_field(at + ".sources", "must name at least one public report");
    }
    return k;
}

std::vector<KnownIssue> parse_known_issues(const nlohmann::json& j)
{
    if (!j.is_array()) {
        bad_field("known_issues", "must be a list of {issue, advice, sources}");
    }
    std::vector<KnownIssue> out;
    out.reserve(j.size());
    for (std::size_t i = 0; i < j.size(); ++i) {
        out.push_back(parse_known_issue(j[i], "known_issues[" + std::to_string(i) + "]"));
    }
    return out;
}

GpuProfile parse_document(const data::Field& root)
{
    root.only_fields(k_fields, k_schema, k_retired);
    const nlohmann::json& doc = root.json();
    GpuProfile p;
    p.name = nonempty_string(doc.contains("name") ? doc["name"] : nlohmann::json(), "name");
    p.ids = parse_ids(doc.contains("ids") ? doc["ids"] : nlohmann::json());
    if (doc.contains("vram_gib")) {
        if (!doc["vram_gib"].is_number() || doc["vram_gib"].get<double>() <= 0) {
            bad_field("vram_gib", "must be a positive number (GiB)");
        }
        p.vram_gib = doc["vram_gib"].get<double>();
    }
    if (doc.contains("vram_note")) {
        p.vram_note = nonempty_string(doc["vram_note"], "vram_note");
    }
    if (doc.contains("functions")) {
        p.functions = parse_functions(doc["functions"]);
    }
    if (doc.contains("quirks")) {
        p.quirks = string_list(doc["quirks"], "quirks");
    }
    if (doc.contains("known_issues")) {
        p.known_issues = parse_known_issues(doc["known_issues"]);
    }
    if (doc.contains("sources")) {
        string_list(doc["sources"], "sources"); // documentation only: checked, not kept
    }
    return p;
}

} // namespace

std::size_t gpu_profile_loads() noexcept
{
    return g_loads;
}

const std::vector<GpuProfile>& gpu_profiles(const PlanContext& ctx)
{
    static const std::vector<GpuProfile> none;
    return ctx.gpu_profiles != nullptr ? *ctx.gpu_profiles : none;
}

Result<GpuProfile> parse_gpu_profile(std::string_view json_text, const std::string& where)
{
    return data::load<GpuProfile>(json_text, where, k_schema, parse_document);
}

Result<std::vector<GpuProfile>> load_gpu_profiles(const DataDir& data)
{
    ++g_loads;
    std::vector<GpuProfile> out;
    std::map<std::string, std::string> claimed; // id -> file
    for (const auto& name : data.list("profiles", "gpus")) {
        if (!name.ends_with(".json")) {
            continue;
        }
        const auto where = data.origin("profiles", "gpus/" + name).value_or("profiles/gpus/" + name);
        auto text = data.read("profiles", "gpus/" + name);
        if (!text) {
            return fail(Errc::usage, where + ": " + text.error().what());
        }
        auto profile = parse_gpu_profile(*text, where);
        if (!profile) {
            return tl::unexpected(profile.error());
        }
        profile->file = name;
        for (const auto& id : profile->ids) {
            if (const auto [it, fresh] = claimed.emplace(id, name); !fresh) {
                return fail(Errc::usage, where + ": ids " + id + " is also claimed by " + it->second + " (one profile per card model)");
            }
        }
        out.push_back(std::move(*profile));
    }
    return out;
}

const GpuProfile* find_profile(const std::vector<GpuProfile>& profiles, std::string_view vendor_device)
{
    for (const auto& p : profiles) {
        if (std::find(p.ids.begin(), p.ids.end(), vendor_device) != p.ids.end()) {
            return &p;
        }
    }
    return nullptr;
}

namespace {

std::string class_text(std::uint16_t class16)
{
    return util::hex(class16, 4);
}

// What a missing function means and what to do (docs/facts.md: nvidia).
std::string missing_advice(const scan::GpuCard& card, const ProfileFunction& f)
{
    std::string out;
    if (card.vendor_row != nullptr && card.vendor_row->hidden_audio && f.class16 == 0x0403) {
        out = "Linux 5.3 and later expose an " + card.vendor_row->name
              + " audio function that the firmware hid, so on this host it was "
                "most likely removed through sysfs, or this board has none. ";
    } else {
        out = "This board may not have it, or it was removed through sysfs. ";
    }
    return out
           + "A removed function comes back with 'echo 1 > /sys/bus/pci/rescan'; run 'passthru plan' again once "
             "'passthru scan' shows it, so the binding and the VM include it";
}

} // namespace

void check_function_layout(const scan::Inventory& inv, const scan::GpuCard& card, const std::vector<GpuProfile>& profiles,
                           const std::string& label, Plan& plan)
{
    const scan::PciDevice* first = card.functions.empty() ? nullptr : inv.find(card.functions.front());
    const GpuProfile* profile = first != nullptr ? find_profile(profiles, first->vendor_device()) : nullptr;
    if (profile == nullptr || profile->functions.empty()) {
        return;
    }
    const std::string source = "the profile " + profile->file;
    std::map<int, const scan::PciDevice*> shown;
    for (const auto& addr : card.functions) {
        shown[addr.function] = inv.find(addr);
    }
    for (const auto& f : profile->functions) {
        const std::string expected = "function " + std::to_string(f.function) + " (" + f.role + ", class " + class_text(f.class16) + ")";
        const auto it = shown.find(f.function);
        if (it == shown.end()) {
            plan.warnings.push_back(label + ": " + source + " lists " + expected + ", but the host shows no " + card.slot + "."
                                    + std::to_string(f.function) + ", so the VM will not get it. " + missing_advice(card, f));
            continue;
        }
        const auto cls = it->second != nullptr ? it->second->class16() : std::nullopt;
        if (cls != f.class16) {
            plan.warnings.push_back(label + ": " + card.slot + "." + std::to_string(f.function) + " is class "
                                    + (cls ? class_text(*cls) : std::string("unknown")) + " where " + source + " lists " + expected
                                    + ": the profile may describe another board, so check its memory and notes against the card");
        }
    }
    for (const auto& [number, device] : shown) {
        const bool listed = std::any_of(profile->functions.begin(), profile->functions.end(),
                                        [n = number](const ProfileFunction& f) { return f.function == n; });
        if (!listed) {
            const auto cls = device != nullptr ? device->class16() : std::nullopt;
            plan.notes.push_back(label + ": the host shows " + card.slot + "." + std::to_string(number) + " (class "
                                 + (cls ? class_text(*cls) : std::string("unknown")) + "), which " + source
                                 + " does not list; it goes to the VM with the card like every function of the slot");
        }
    }
}

} // namespace passthru::plan::detail
