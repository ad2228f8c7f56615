// SPDX-License-Identifier: GPL-2.0-or-later
// passthru's own data (templates/, profiles/) in layers, and mustache
// rendering of the templates with JSON data.
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <kainjow/mustache.hpp>

#include "data/gpu_vendors.hpp"
#include "format/grammar.hpp"
#include "plan/planner.hpp"
#include "util/local_file.hpp"

namespace passthru::plan {

namespace {

// A name inside a kind directory: relative, no "..", no empty components.
bool valid_name(std::string_view name)
{
    if (name.empty() || name.front() == '/' || name.back() == '/') {
        return false;
    }
    std::size_t start = 0;
    while (start <= name.size()) {
        const auto end = std::min(name.find('/', start), name.size());
        const auto part = name.substr(start, end - start);
        if (part.empty() || part == "." || part == "..") {
            return false;
        }
        start = end + 1;
    }
    return true;
}

bool valid_kind(std::string_view kind)
{
    return kind == "templates" || kind == "profiles";
}

// Whether this binary runs from the build tree it was built in (the tests,
// a developer): only then are the repository's templates/ and profiles/ a
// layer of their own. An installed binary (/usr/bin/passthru) reads only
// the installed data, whatever was left at the path it was built from.
bool runs_from_build_tree()
{
    const std::filesystem::path exe = util::own_executable_path();
    if (exe.empty()) {
        return false;
    }
    const std::filesystem::path build = std::filesystem::path(PASSTHRU_BUILD_DIR).lexically_normal();
    const auto rel = exe.lexically_normal().lexically_relative(build);
    return !rel.empty() && *rel.begin() != "..";
}

std::optional<std::string> read_local(const std::filesystem::path& path)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        return std::nullopt;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

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

DataDir::DataDir(const util::HostFs& fs, std::optional<std::filesystem::path> data_dir) : m_fs(fs)
{
    if (data_dir) {
        m_dirs.push_back(*data_dir);
    }
    m_dirs.emplace_back(PASSTHRU_INSTALLED_DATA_DIR);
    if (runs_from_build_tree()) {
        m_dirs.emplace_back(PASSTHRU_SOURCE_DATA_DIR);
    }
}

Result<std::string> DataDir::read(std::string_view kind, std::string_view name) const
{
    const std::string key = std::string(kind) + "/" + std::string(name);
    if (auto it = m_read_cache.find(key); it != m_read_cache.end()) {
        return it->second;
    }
    auto text = read_uncached(kind, name);
    m_read_cache.emplace(key, text);
    return text;
}

Result<std::string> DataDir::read_uncached(std::string_view kind, std::string_view name) const
{
    if (!valid_kind(kind) || !valid_name(name)) {
        return fail(Errc::internal, "invalid data name '" + std::string(kind) + "/" + std::string(name) + "'");
    }
    const std::string override_path = "/etc/passthru/" + std::string(kind) + "/" + std::string(name);
    if (m_fs.stat(override_path).type != util::FileType::missing) {
        auto text = m_fs.read_file(override_path);
        if (!text) {
            return fail(Errc::io, "cannot read the override " + override_path + ": " + text.error().what());
        }
        return *text;
    }
    for (const auto& dir : m_dirs) {
        if (auto text = read_local(dir / kind / name)) {
            return *text;
        }
    }
    return tl::unexpected(Error(Errc::not_found, "passthru data file " + std::string(kind) + "/" + std::string(name) + " not found")
                              .with_hint("install passthru's templates and profiles, or give --data-dir DIR"));
}

std::vector<std::string> DataDir::list(std::string_view kind, std::string_view subdir) const
{
    std::vector<std::string> out;
    std::set<std::string> seen;
    if (!valid_kind(kind) || (!subdir.empty() && !valid_name(subdir))) {
        return out;
    }
    const std::string rel = subdir.empty() ? std::string(kind) : std::string(kind) + "/" + std::string(subdir);
    auto add = [&](std::vector<std::string> names) {
        std::sort(names.begin(), names.end());
        for (auto& n : names) {
            if (seen.insert(n).second) {
                out.push_back(std::move(n));
            }
        }
    };
    if (auto names = m_fs.list_dir("/etc/passthru/" + rel)) {
        std::vector<std::string> files;
        for (const auto& n : *names) {
            if (m_fs.stat("/etc/passthru/" + rel + "/" + n).type == util::FileType::regular) {
                files.push_back(n);
            }
        }
        add(std::move(files));
    }
    for (const auto& dir : m_dirs) {
        std::error_code ec;
        std::vector<std::string> files;
        for (std::filesystem::directory_iterator it(dir / rel, ec), end; !ec && it != end; it.increment(ec)) {
            if (it->is_regular_file(ec)) {
                files.push_back(it->path().filename().string());
            }
        }
        add(std::move(files));
    }
    return out;
}

std::optional<std::string> DataDir::origin(std::string_view kind, std::string_view name) const
{
    if (!valid_kind(kind) || !valid_name(name)) {
        return std::nullopt;
    }
    const std::string override_path = "/etc/passthru/" + std::string(kind) + "/" + std::string(name);
    if (m_fs.stat(override_path).type != util::FileType::missing) {
        return override_path + " (under the root)";
    }
    for (const auto& dir : m_dirs) {
        std::error_code ec;
        const auto path = dir / kind / name;
        if (std::filesystem::is_regular_file(path, ec)) {
            return path.string();
        }
    }
    return std::nullopt;
}

Result<scan::KernelCutoffs> load_kernel_cutoffs(const DataDir& data)
{
    return data.load_profile("host/kernel.json", scan::parse_kernel_cutoffs);
}

Result<scan::GpuVendors> load_gpu_vendors(const DataDir& data)
{
    return data.load_profile("host/vendors.json", passthru::data::parse_gpu_vendors);
}

Result<std::string> render_template(const DataDir& data, std::string_view name, const nlohmann::json& values)
{
    auto text = data.read("templates", name);
    if (!text) {
        return tl::unexpected(text.error());
    }
    kainjow::mustache::mustache tmpl{*text};
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
