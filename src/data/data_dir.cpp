// SPDX-License-Identifier: GPL-2.0-or-later
// passthru's own data (templates/, profiles/) in layers.
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "data/data_dir.hpp"
#include "util/local_file.hpp"

namespace passthru::data {

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

} // namespace passthru::data
