// SPDX-License-Identifier: GPL-2.0-or-later
// HostFs (util/host_fs.hpp): the root and the resolution of host paths inside
// it. HostFs::open opens the root once (O_PATH); open_in_root and open_parent
// resolve every host path from that descriptor with openat2(RESOLVE_IN_ROOT |
// RESOLVE_NO_MAGICLINKS), symlinks and ".." included, so no path leaves the
// root; resolve() and local() compute names only. Also the lexical host-path
// helpers (join_host_path, base_name, dir_name) and the helpers the other
// util/host_fs_*.cpp files share (util/host_fs_detail.hpp).
#include "util/host_fs.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>

#include "util/host_fs_detail.hpp"

namespace passthru::util {

namespace {

std::string errno_text(int err)
{
    return std::strerror(err);
}

} // namespace

namespace detail {

std::vector<std::string> split_components(std::string_view path)
{
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < path.size()) {
        while (i < path.size() && path[i] == '/') {
            ++i;
        }
        std::size_t j = i;
        while (j < path.size() && path[j] != '/') {
            ++j;
        }
        if (j > i) {
            out.emplace_back(path.substr(i, j - i));
        }
        i = j;
    }
    return out;
}

std::string join_components(const std::vector<std::string>& parts)
{
    if (parts.empty()) {
        return "/";
    }
    std::string out;
    for (const auto& p : parts) {
        out += '/';
        out += p;
    }
    return out;
}

Error io_error(std::string_view what, std::string_view path, int err)
{
    return Error(err == ENOENT ? Errc::not_found : Errc::io, std::string(what) + " " + std::string(path) + ": " + errno_text(err));
}

} // namespace detail

using detail::io_error;
using detail::join_components;
using detail::k_max_symlinks;
using detail::split_components;
using detail::UniqueFd;

namespace {

// openat2(2) of host_path with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS on the
// descriptor of the root: the kernel resolves every component, symlink bodies
// and ".." included, as if root_fd were "/", in one walk that a concurrent
// rename cannot lead outside it. -1 with errno set on failure.
int openat2_in_root(int root_fd, std::string_view host_path, int flags, mode_t mode = 0)
{
    std::string rel(host_path);
    const auto first = rel.find_first_not_of('/');
    rel.erase(0, first == std::string::npos ? rel.size() : first);
    if (rel.empty()) {
        rel = ".";
    }
    open_how how{};
    how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
    how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    // With RESOLVE_IN_ROOT the kernel answers EAGAIN when a rename or mount anywhere on the
    // system raced the resolution of a ".." component; the call may simply be retried
    // (docs/facts.md: openat2). Bounded, so a sustained race fails closed with EAGAIN.
    constexpr int max_attempts = 256;
    long fd = -1;
    for (int attempt = 0; attempt < max_attempts; ++attempt) {
        fd = ::syscall(SYS_openat2, root_fd, rel.c_str(), &how, sizeof how);
        if (fd >= 0 || errno != EAGAIN) {
            break;
        }
    }
    return static_cast<int>(fd);
}

} // namespace

std::string join_host_path(std::string_view dir, std::string_view target)
{
    std::vector<std::string> parts;
    if (target.empty() || target.front() != '/') {
        parts = split_components(dir);
    }
    for (auto& comp : split_components(target)) {
        if (comp == ".") {
            continue;
        }
        if (comp == "..") {
            if (!parts.empty()) {
                parts.pop_back();
            }
            continue;
        }
        parts.push_back(std::move(comp));
    }
    return join_components(parts);
}

std::string_view base_name(std::string_view host_path)
{
    while (host_path.size() > 1 && host_path.back() == '/') {
        host_path.remove_suffix(1);
    }
    const auto pos = host_path.rfind('/');
    return pos == std::string_view::npos ? host_path : host_path.substr(pos + 1);
}

std::string dir_name(std::string_view host_path)
{
    auto parts = split_components(host_path);
    if (!parts.empty()) {
        parts.pop_back();
    }
    return join_components(parts);
}

Result<HostFs> HostFs::open(const std::filesystem::path& root)
{
    std::error_code ec;
    const auto canonical = std::filesystem::canonical(root, ec);
    if (ec == std::errc::permission_denied) {
        return tl::unexpected(io_error("cannot read root", root.string(), EACCES));
    }
    if (ec || !std::filesystem::is_directory(canonical, ec)) {
        return fail(Errc::not_found, "root " + root.string() + " is not an existing directory");
    }
    const bool live = canonical == std::filesystem::path("/");
    if (::access(canonical.c_str(), R_OK | X_OK) != 0) {
        // Else every read below fails alike and scan reports "no PCI devices".
        return tl::unexpected(io_error("cannot read root", canonical.string(), errno));
    }
    const int fd = ::open(canonical.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return tl::unexpected(io_error("cannot open root", canonical.string(), errno));
    }
    auto root_fd = std::shared_ptr<const int>(new int(fd), [](const int* p) {
        ::close(*p);
        delete p;
    });
    // Every access goes through openat2(2); without it nothing keeps a path
    // inside the root while someone renames its directories: fail closed.
    const UniqueFd probe(openat2_in_root(fd, "/", O_PATH | O_DIRECTORY));
    if (!probe.ok()) {
        const int err = errno;
        if (err == ENOSYS || err == EPERM || err == EINVAL || err == E2BIG) {
            return tl::unexpected(Error(Errc::precondition, "this kernel offers no openat2(2) (" + errno_text(err)
                                                                + "): passthru cannot keep its reads and writes inside "
                                                                + canonical.string())
                                      .with_hint("run passthru on Linux 5.6 or later (Debian 12's kernel has openat2), "
                                                 "outside a seccomp filter that blocks it"));
        }
        return tl::unexpected(io_error("cannot open root", canonical.string(), err));
    }
    return HostFs(canonical, live, std::move(root_fd));
}

std::string HostFs::local_str(const std::string& resolved_host_path) const
{
    if (m_live) {
        return resolved_host_path;
    }
    if (resolved_host_path == "/") {
        return m_root.string();
    }
    return m_root.string() + resolved_host_path;
}

// Only for names (resolve(), local(), HostDir::path()): no file is opened,
// created or removed through the path this returns.
Result<std::string> HostFs::resolve_impl(std::string_view host_path, bool follow_last) const
{
    std::deque<std::string> todo;
    for (auto& c : split_components(host_path)) {
        todo.push_back(std::move(c));
    }
    std::vector<std::string> done;
    int links = 0;
    bool missing = false;
    while (!todo.empty()) {
        std::string comp = std::move(todo.front());
        todo.pop_front();
        if (comp == ".") {
            continue;
        }
        if (comp == "..") {
            if (!done.empty()) {
                done.pop_back();
            }
            continue;
        }
        done.push_back(comp);
        if (missing || (!follow_last && todo.empty())) {
            continue;
        }
        const std::string local = local_str(join_components(done));
        struct stat st
        {};
        if (::lstat(local.c_str(), &st) != 0) {
            // The rest does not exist yet (a file about to be created).
            missing = true;
            continue;
        }
        if (!S_ISLNK(st.st_mode)) {
            continue;
        }
        if (++links > k_max_symlinks) {
            return fail(Errc::io, "too many levels of symbolic links in " + std::string(host_path));
        }
        char buf[4096];
        const ssize_t n = ::readlink(local.c_str(), buf, sizeof buf);
        if (n < 0 || static_cast<std::size_t>(n) >= sizeof buf) {
            return tl::unexpected(io_error("cannot read link", join_components(done), errno));
        }
        const std::string target(buf, static_cast<std::size_t>(n));
        done.pop_back();
        if (!target.empty() && target.front() == '/') {
            done.clear(); // absolute targets are re-anchored at the root
        }
        auto parts = split_components(target);
        for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
            todo.push_front(*it);
        }
    }
    return join_components(done);
}

Result<std::string> HostFs::resolve(std::string_view host_path) const
{
    note(host_path, Access::stat);
    return resolve_impl(host_path, true);
}

Result<std::filesystem::path> HostFs::local(std::string_view host_path) const
{
    note(host_path, Access::stat);
    auto resolved = resolve_impl(host_path, true);
    if (!resolved) {
        return tl::unexpected(resolved.error());
    }
    return std::filesystem::path(local_str(*resolved));
}

int HostFs::open_in_root(std::string_view host_path, int flags, mode_t mode) const
{
    return openat2_in_root(*m_root_fd, host_path, flags, mode);
}

int HostFs::open_parent(std::string_view host_path, std::string& name, int flags) const
{
    auto parts = split_components(host_path);
    if (parts.empty() || parts.back() == "." || parts.back() == "..") {
        errno = EINVAL;
        return -1;
    }
    name = std::move(parts.back());
    parts.pop_back();
    return open_in_root(join_components(parts), flags | O_DIRECTORY);
}

} // namespace passthru::util
