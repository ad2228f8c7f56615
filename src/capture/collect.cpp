// SPDX-License-Identifier: GPL-2.0-or-later
#include "capture/collect.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

namespace passthru::capture {

namespace {

constexpr int k_max_link_hops = 40; // as the kernel's ELOOP limit

std::vector<std::string> components(std::string_view path)
{
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < path.size()) {
        const std::size_t end = std::min(path.find('/', i), path.size());
        if (end > i) {
            out.emplace_back(path.substr(i, end - i));
        }
        i = end + 1;
    }
    return out;
}

class Collector
{
public:
    explicit Collector(const util::HostFs& fs) : m_fs(fs) {}

    void add_entry(const std::string& path, const util::ReadLog::Entry& entry);
    void add_module_indexes();
    std::vector<Member> members() const;

private:
    struct Found
    {
        std::string path;
        util::FileInfo info;
    };
    std::optional<Found> walk(std::string_view path, bool follow_last);
    void add_dir(const std::string& path, mode_t mode);
    void add_file(const std::string& path, mode_t mode, const std::optional<std::string>& content);
    void add_link(const std::string& path);
    void add_listed(const std::string& dir);

    const util::HostFs& m_fs;
    std::map<std::string, Member> m_members;
    std::set<std::string> m_module_dirs; // /lib/modules/RELEASE, as noted
};

// Follows `path` from the root one component at a time (as the kernel would
// below the root), adding every directory and symlink met on the way. The
// last component is followed only with follow_last.
std::optional<Collector::Found> Collector::walk(std::string_view path, bool follow_last)
{
    std::vector<std::string> parts = components(path);
    std::string cur;
    int hops = 0;
    util::FileInfo info = m_fs.stat("/");
    for (std::size_t i = 0; i < parts.size();) {
        if (parts[i] == "." || parts[i] == "..") {
            cur = parts[i] == ".." ? (cur.empty() ? cur : util::dir_name(cur)) : cur;
            cur = cur == "/" ? "" : cur;
            ++i;
            continue;
        }
        const std::string next = cur + "/" + parts[i];
        info = m_fs.stat(next);
        const bool last = i + 1 == parts.size();
        if (info.type == util::FileType::missing) {
            return std::nullopt;
        }
        if (info.type == util::FileType::symlink) {
            add_link(next);
            if (last && !follow_last) {
                return Found{next, info};
            }
            const auto target = m_fs.read_link(next);
            if (!target || ++hops > k_max_link_hops) {
                return std::nullopt;
            }
            std::vector<std::string> rest(parts.begin() + static_cast<std::ptrdiff_t>(i) + 1, parts.end());
            parts = components(util::join_host_path(cur.empty() ? "/" : cur, *target));
            parts.insert(parts.end(), rest.begin(), rest.end());
            cur.clear();
            i = 0;
            continue;
        }
        if (info.type == util::FileType::directory) {
            add_dir(next, info.mode);
        }
        cur = next;
        ++i;
    }
    return Found{cur.empty() ? "/" : cur, info};
}

void Collector::add_dir(const std::string& path, mode_t mode)
{
    if (path == "/" || m_members.contains(path)) {
        return;
    }
    m_members.emplace(path, Member{path, MemberType::directory, {}, mode | 0700, false});
}

void Collector::add_file(const std::string& path, mode_t mode, const std::optional<std::string>& content)
{
    auto it = m_members.find(path);
    if (it != m_members.end() && (it->second.type != MemberType::file || !it->second.placeholder)) {
        return;
    }
    m_members[path] = Member{path, MemberType::file, content.value_or(""), mode | 0600, !content.has_value()};
}

void Collector::add_link(const std::string& path)
{
    if (m_members.contains(path)) {
        return;
    }
    if (const auto target = m_fs.read_link(path)) {
        m_members.emplace(path, Member{path, MemberType::symlink, *target, 0777, false});
    }
}

// The entries of a listed directory: a listing shows every name, so each is
// packed (links as links, directories empty, files as placeholders).
void Collector::add_listed(const std::string& dir)
{
    const auto names = m_fs.list_dir(dir);
    if (!names) {
        return;
    }
    for (const auto& name : *names) {
        const std::string child = (dir == "/" ? "" : dir) + "/" + name;
        const util::FileInfo info = m_fs.stat(child);
        if (info.type == util::FileType::symlink) {
            add_link(child);
        } else if (info.type == util::FileType::directory) {
            add_dir(child, info.mode);
        } else if (info.type == util::FileType::regular) {
            add_file(child, info.mode, std::nullopt);
        }
    }
}

void Collector::add_entry(const std::string& path, const util::ReadLog::Entry& entry)
{
    for (const std::string_view prefix : {"/lib/modules/", "/usr/lib/modules/"}) {
        if (path.starts_with(prefix)) {
            const auto release = components(std::string_view(path).substr(prefix.size()));
            if (!release.empty()) {
                m_module_dirs.insert(std::string(prefix) + release.front());
            }
        }
    }
    const unsigned only_link = static_cast<unsigned>(util::Access::link);
    const auto found = walk(path, entry.access != only_link);
    if (!found) {
        return;
    }
    if (found->info.type == util::FileType::regular) {
        const bool read = (entry.access & static_cast<unsigned>(util::Access::read)) != 0U;
        add_file(found->path, found->info.mode, read ? entry.content : std::nullopt);
    } else if (found->info.type == util::FileType::directory && (entry.access & static_cast<unsigned>(util::Access::list)) != 0U) {
        add_listed(found->path);
    }
}

void Collector::add_module_indexes()
{
    for (const auto& dir : m_module_dirs) {
        const auto found = walk(dir, true);
        if (!found || found->info.type != util::FileType::directory) {
            continue;
        }
        const auto names = m_fs.list_dir(found->path);
        if (!names) {
            continue;
        }
        for (const auto& name : *names) {
            const std::string file = found->path + "/" + name;
            const util::FileInfo info = m_fs.stat(file);
            if (!name.starts_with("modules.") || info.type != util::FileType::regular || info.size > k_max_module_index_bytes) {
                continue;
            }
            if (auto text = m_fs.read_file(file)) {
                add_file(file, info.mode, *text);
            }
        }
    }
}

std::vector<Member> Collector::members() const
{
    std::vector<Member> out;
    out.reserve(m_members.size());
    for (const auto& [path, member] : m_members) {
        out.push_back(member);
    }
    return out;
}

} // namespace

std::vector<Member> collect_members(const util::HostFs& fs, const std::map<std::string, util::ReadLog::Entry>& log)
{
    Collector collector(fs);
    for (const auto& [path, entry] : log) {
        collector.add_entry(path, entry);
    }
    collector.add_module_indexes();
    return collector.members();
}

} // namespace passthru::capture
