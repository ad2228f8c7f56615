// SPDX-License-Identifier: GPL-2.0-or-later
// GPU profiles (profiles/gpus/*.json): loading, schema checks and lookup by
// vendor:device. The schema is in docs/data.md.
#include "data/gpu_profile.hpp"

#include <algorithm>
#include <array>
#include <map>

#include "data/schema.hpp"
#include "util/strings.hpp"
#include "util/term.hpp"

namespace passthru::data {

namespace {

constexpr std::string_view k_gpu_schema = "passthru.gpu-profile/1";

std::size_t g_gpu_profile_loads = 0;

// Fields earlier releases shipped and never used: accepted and ignored, so a
// copy of an old profile under /etc/passthru keeps loading.
constexpr std::array<std::string_view, 4> k_retired = {"architecture", "chip", "tdp_watts", "vendor"};
constexpr std::array<std::string_view, 11> k_profile_fields = {"schema", "name",         "ids",     "vram_gib", "vram_note", "functions",
                                                               "quirks", "known_issues", "sources", "reset",    "rom_file"};

bool lower_hex(std::string_view text, std::size_t digits)
{
    return text.size() == digits && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string profile_text(const Field& f)
{
    auto text = f.if_string().value_or("");
    if (text.empty()) {
        f.fail("must be a non-empty string");
    }
    // Every string of a profile may reach a generated file (the name goes into
    // passthru-vfio.conf and the VM config), and those files are line-based.
    if (!util::one_line(text)) {
        // A value that would break a generated file (format/grammar.hpp: line_text) is a refusal, not a typo.
        throw SchemaError(f.path() + " '" + util::shown_value(text) + "' is not one line of text: no line break or other control character",
                          true, "a profile's values go into configuration files: fix the profile and plan again");
    }
    return text;
}

std::vector<std::string> profile_texts(const Field& f)
{
    if (!f.is_array()) {
        f.fail("must be a list of strings");
    }
    std::vector<std::string> out;
    for (const Field& at : f.elements()) {
        out.push_back(profile_text(at));
    }
    return out;
}

// "10de:1e07": the vendor:device of function 0, lower-case hex.
std::vector<std::string> profile_ids(const Field& f)
{
    if (!f.is_array() || f.size() == 0) {
        f.fail("must be a non-empty list of vendor:device ids (\"10de:1e07\")");
    }
    std::vector<std::string> out;
    for (const Field& at : f.elements()) {
        const std::string id = at.if_string().value_or("");
        if (!vendor_device_id(id)) {
            at.fail("must be a vendor:device id in lower-case hex (\"10de:1e07\")");
        }
        if (std::find(out.begin(), out.end(), id) != out.end()) {
            at.fail(id + " is listed twice");
        }
        out.push_back(id);
    }
    return out;
}

ProfileFunction profile_function(const Field& f)
{
    if (!f.is_object()) {
        f.fail("must be an object with function, class and role");
    }
    // "id" was documentation in earlier releases: accepted and ignored.
    for (const auto& key : f.keys()) {
        if (key != "function" && key != "class" && key != "role" && key != "id") {
            f[key].fail("is not a field of a function (function, class, role)");
        }
    }
    ProfileFunction out;
    const auto number = f["function"].if_integer();
    if (!number || *number < 0 || *number > 7) {
        f["function"].fail("must be the PCI function number, 0 to 7");
    }
    out.function = static_cast<int>(*number);
    const std::string cls_text = f["class"].if_string().value_or("");
    if (!lower_hex(cls_text, 4)) {
        f["class"].fail("must be the PCI class and subclass, 4 lower-case hex digits (\"0403\")");
    }
    out.class16 = static_cast<std::uint16_t>(std::stoul(cls_text, nullptr, 16));
    out.role = profile_text(f["role"]);
    return out;
}

std::vector<ProfileFunction> profile_functions(const Field& f)
{
    if (!f.is_array() || f.size() == 0) {
        f.fail("must be a non-empty list of the card's PCI functions");
    }
    std::vector<ProfileFunction> out;
    for (const Field& at : f.elements()) {
        auto fn = profile_function(at);
        if (std::any_of(out.begin(), out.end(), [&](const ProfileFunction& o) { return o.function == fn.function; })) {
            at["function"].fail("function " + std::to_string(fn.function) + " is listed twice");
        }
        out.push_back(std::move(fn));
    }
    if (std::none_of(out.begin(), out.end(), [](const ProfileFunction& fn) { return fn.function == 0; })) {
        f.fail("must list function 0 (the function the ids name)");
    }
    std::sort(out.begin(), out.end(), [](const ProfileFunction& a, const ProfileFunction& b) { return a.function < b.function; });
    return out;
}

KnownIssue known_issue(const Field& f)
{
    if (!f.is_object()) {
        f.fail("must be an object with issue, advice and sources");
    }
    for (const auto& key : f.keys()) {
        if (key != "issue" && key != "advice" && key != "sources") {
            f[key].fail("is not a field of a known issue (issue, advice, sources)");
        }
    }
    KnownIssue k;
    k.issue = profile_text(f["issue"]);
    k.advice = profile_text(f["advice"]);
    k.sources = profile_texts(f["sources"]);
    if (k.sources.empty()) {
        f["sources"].fail("must name at least one public report");
    }
    return k;
}

std::vector<KnownIssue> known_issues(const Field& f)
{
    if (!f.is_array()) {
        f.fail("must be a list of {issue, advice, sources}");
    }
    std::vector<KnownIssue> out;
    for (const Field& at : f.elements()) {
        out.push_back(known_issue(at));
    }
    return out;
}

// A source that a reader can open: an https URL, one line.
std::string profile_url(const Field& f)
{
    auto text = profile_text(f);
    if (!text.starts_with("https://") || text.find(' ') != std::string::npos) {
        f.fail("must be the https URL of a public report");
    }
    return text;
}

ResetFacts reset_facts(const Field& f)
{
    f.object();
    f.only_fields({"warm_reboot_resets", "detail", "source"}, "a model's reset facts");
    return {f["warm_reboot_resets"].boolean(), profile_text(f["detail"]), profile_url(f["source"])};
}

RomFileNeed rom_file_fact(const Field& f)
{
    f.object();
    f.only_fields({"why", "source"}, "a model's ROM file need");
    return {profile_text(f["why"]), profile_url(f["source"])};
}

GpuProfile gpu_profile_document(const Field& root)
{
    root.only_fields(k_profile_fields, k_gpu_schema, k_retired);
    GpuProfile p;
    p.name = profile_text(root["name"]);
    p.ids = profile_ids(root["ids"]);
    if (root.has("vram_gib")) {
        const auto vram = root["vram_gib"].if_number();
        if (!vram || *vram <= 0) {
            root["vram_gib"].fail("must be a positive number (GiB)");
        }
        p.vram_gib = *vram;
    }
    if (root.has("vram_note")) {
        p.vram_note = profile_text(root["vram_note"]);
    }
    if (root.has("functions")) {
        p.functions = profile_functions(root["functions"]);
    }
    if (root.has("quirks")) {
        p.quirks = profile_texts(root["quirks"]);
    }
    if (root.has("known_issues")) {
        p.known_issues = known_issues(root["known_issues"]);
    }
    if (root.has("reset")) {
        p.reset = reset_facts(root["reset"]);
    }
    if (root.has("rom_file")) {
        p.rom_file = rom_file_fact(root["rom_file"]);
    }
    if (root.has("sources")) {
        profile_texts(root["sources"]); // documentation only: checked, not kept
    }
    return p;
}

} // namespace

std::size_t gpu_profile_loads() noexcept
{
    return g_gpu_profile_loads;
}

Result<GpuProfile> parse_gpu_profile(std::string_view json_text, const std::string& where)
{
    return load<GpuProfile>(json_text, where, k_gpu_schema, gpu_profile_document);
}

Result<std::vector<GpuProfile>> load_gpu_profiles(const DataDir& data)
{
    ++g_gpu_profile_loads;
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
        PASSTHRU_TRY_ASSIGN(auto profile, parse_gpu_profile(*text, where));
        profile.file = name;
        for (const auto& id : profile.ids) {
            if (const auto [it, fresh] = claimed.emplace(id, name); !fresh) {
                return fail(Errc::usage, where + ": ids " + id + " is also claimed by " + it->second + " (one profile per card model)");
            }
        }
        out.push_back(std::move(profile));
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

} // namespace passthru::data
