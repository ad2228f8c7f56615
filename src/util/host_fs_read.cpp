// SPDX-License-Identifier: GPL-2.0-or-later
// HostFs (util/host_fs.hpp): descriptors and reads. HostDir (an open directory
// whose entries are read by name, never leaving it nor following a link on the
// way), HostDevice (a character device opened read-write), and the reads of
// HostFs: read_file, read_attr, read_link, list_dir, open_dir,
// open_char_device, exists, is_dir and stat.
#include "util/host_fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "util/host_fs_detail.hpp"

namespace passthru::util {

using detail::io_error;
using detail::split_components;
using detail::UniqueFd;

namespace {

enum class ShortRead
{
    continue_reading, // procfs (seq_file) returns a page at a time
    is_end,           // sysfs attributes fit in one read
};

std::optional<std::string> read_fd_all(int fd, std::size_t max_bytes, ShortRead short_read = ShortRead::continue_reading)
{
    std::string out;
    char buf[8192];
    while (out.size() < max_bytes) {
        const std::size_t want = std::min(sizeof buf, max_bytes - out.size());
        const ssize_t n = ::read(fd, buf, want);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return std::nullopt;
        }
        if (n == 0) {
            break;
        }
        out.append(buf, static_cast<std::size_t>(n));
        if (short_read == ShortRead::is_end && static_cast<std::size_t>(n) < want) {
            break;
        }
    }
    return out;
}

void trim_right(std::string& s)
{
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\0')) {
        s.pop_back();
    }
}

} // namespace

// ---- HostDir -------------------------------------------------------------

namespace {

// Opens `name` below the directory descriptor dfd without following any
// symlink and without leaving the directory: one component is an openat(2)
// with O_NOFOLLOW; a relative path of several components ("12/type") is one
// openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS (Linux >= 5.6), or a
// walk of O_NOFOLLOW openat(2) calls where openat2 is missing.
int open_beneath(int dfd, std::string_view name, int flags)
{
    flags |= O_CLOEXEC | O_NOFOLLOW;
    if (name.empty() || name.front() == '/') {
        errno = EINVAL;
        return -1;
    }
    const bool single = name.find('/') == std::string_view::npos;
    if (single && name != "..") {
        return ::openat(dfd, std::string(name).c_str(), flags);
    }
    static std::atomic<bool> have_openat2{true};
    if (have_openat2.load(std::memory_order_relaxed)) {
        open_how how{};
        how.flags = static_cast<std::uint64_t>(flags);
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
        const std::string path(name);
        long fd = -1;
        for (int attempt = 0; attempt < 256; ++attempt) {
            fd = ::syscall(SYS_openat2, dfd, path.c_str(), &how, sizeof how);
            if (fd >= 0 || errno != EAGAIN) {
                break;
            }
        }
        if (fd >= 0 || errno != ENOSYS) {
            return static_cast<int>(fd);
        }
        have_openat2.store(false, std::memory_order_relaxed);
    }
    const auto parts = split_components(name);
    int cur = -1;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (parts[i] == "..") {
            if (cur >= 0) {
                ::close(cur);
            }
            errno = EXDEV;
            return -1;
        }
        const bool last = i + 1 == parts.size();
        const int next = ::openat(cur >= 0 ? cur : dfd, parts[i].c_str(), last ? flags : (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        const int err = errno;
        if (cur >= 0) {
            ::close(cur);
        }
        if (next < 0) {
            errno = err;
            return -1;
        }
        cur = next;
    }
    if (cur < 0) {
        errno = EINVAL;
    }
    return cur;
}

// Names of the entries of the open directory fd (without "." and ".."),
// sorted; nullopt with errno set when reading it fails.
std::optional<std::vector<std::string>> list_fd(int fd)
{
    std::vector<std::string> names;
    // getdents64(2) straight into a buffer: no DIR stream (whose set-up costs
    // an fstat and an fcntl per directory; scan lists thousands).
    alignas(8) char buf[16384];
    for (;;) {
        const ssize_t n = ::getdents64(fd, buf, sizeof buf);
        if (n < 0) {
            return std::nullopt;
        }
        if (n == 0) {
            break;
        }
        for (ssize_t off = 0; off < n;) {
            const auto* ent = reinterpret_cast<const dirent64*>(buf + off);
            if (std::strcmp(ent->d_name, ".") != 0 && std::strcmp(ent->d_name, "..") != 0) {
                names.emplace_back(ent->d_name);
            }
            off += ent->d_reclen;
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

} // namespace

// ---- ReadLog -------------------------------------------------------------

void ReadLog::note(std::string_view host_path, Access access, const std::string* content)
{
    const std::lock_guard<std::mutex> lock(m_mutex);
    Entry& entry = m_entries[std::string(host_path)];
    entry.access |= static_cast<unsigned>(access);
    if (content != nullptr) {
        entry.content = *content;
    }
}

std::map<std::string, ReadLog::Entry> ReadLog::entries() const
{
    const std::lock_guard<std::mutex> lock(m_mutex);
    return m_entries;
}

void HostDir::note(const char* name, Access access, const std::string* content) const
{
    if (m_log) {
        const std::string_view entry(name);
        m_log->note(entry == "." ? m_path : (m_path == "/" ? "/" : m_path + "/") + std::string(entry), access, content);
    }
}

HostDir::HostDir(HostDir&& other) noexcept : m_fd(other.m_fd), m_path(std::move(other.m_path)), m_log(std::move(other.m_log))
{
    other.m_fd = -1;
}

HostDir& HostDir::operator=(HostDir&& other) noexcept
{
    if (this != &other) {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
        m_fd = other.m_fd;
        m_path = std::move(other.m_path);
        m_log = std::move(other.m_log);
        other.m_fd = -1;
    }
    return *this;
}

HostDir::~HostDir()
{
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

std::optional<std::string> HostDir::read(const char* name, std::size_t max_bytes) const
{
    const int fd = open_beneath(m_fd, name, O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
        note(name, Access::stat);
        return std::nullopt;
    }
    // A sysfs attribute is one page at most and comes in one read; saving the
    // read(2) that would return 0 matters when scanning thousands of devices.
    auto out = read_fd_all(fd, max_bytes, ShortRead::is_end);
    ::close(fd);
    note(name, out ? Access::read : Access::stat, out ? &*out : nullptr);
    return out;
}

std::optional<std::string> HostDir::attr(const char* name) const
{
    auto out = read(name, 64 * 1024);
    if (out) {
        trim_right(*out);
    }
    return out;
}

std::optional<std::string> HostDir::link(const char* name) const
{
    note(name, Access::link);
    char buf[4096];
    const ssize_t n = ::readlinkat(m_fd, name, buf, sizeof buf);
    if (n < 0 || static_cast<std::size_t>(n) >= sizeof buf) {
        return std::nullopt;
    }
    return std::string(buf, static_cast<std::size_t>(n));
}

std::vector<std::string> HostDir::list(const char* name) const
{
    note(name, Access::list);
    const int fd = open_beneath(m_fd, name, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        return {};
    }
    auto names = list_fd(fd);
    ::close(fd);
    return names ? std::move(*names) : std::vector<std::string>{};
}

std::optional<HostDir> HostDir::subdir(const std::string& name) const
{
    if (name.empty() || name == ".." || name == "." || name.front() == '/' || name.back() == '/' || name.find("//") != std::string::npos) {
        return std::nullopt;
    }
    note(name.c_str(), Access::stat);
    const int fd = open_beneath(m_fd, name, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        return std::nullopt;
    }
    return HostDir(fd, m_path == "/" ? "/" + name : m_path + "/" + name, m_log);
}

bool HostDir::has(const char* name) const
{
    note(name, Access::stat);
    struct stat st
    {};
    return ::fstatat(m_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

// ---- HostFs --------------------------------------------------------------

namespace {

FileInfo file_info(const struct stat& st)
{
    FileInfo info;
    if (S_ISREG(st.st_mode)) {
        info.type = FileType::regular;
    } else if (S_ISDIR(st.st_mode)) {
        info.type = FileType::directory;
    } else if (S_ISLNK(st.st_mode)) {
        info.type = FileType::symlink;
    } else {
        info.type = FileType::other;
    }
    info.mode = st.st_mode & 07777;
    info.uid = st.st_uid;
    info.gid = st.st_gid;
    info.size = static_cast<std::uint64_t>(st.st_size);
    if (S_ISCHR(st.st_mode)) {
        info.char_device = true;
        info.rdev_major = major(st.st_rdev);
        info.rdev_minor = minor(st.st_rdev);
    }
    return info;
}

} // namespace

Result<std::string> HostFs::read_file(std::string_view host_path) const
{
    note(host_path, Access::stat);
    const UniqueFd fd(open_in_root(host_path, O_RDONLY | O_NONBLOCK));
    if (!fd.ok()) {
        return tl::unexpected(io_error("cannot read", host_path, errno));
    }
    struct stat st
    {};
    const bool have_stat = ::fstat(fd.get(), &st) == 0;
    if (have_stat && S_ISDIR(st.st_mode)) {
        return fail(Errc::io, "cannot read " + std::string(host_path) + ": is a directory");
    }
    const auto too_large = [&host_path] {
        return fail(Errc::precondition, "refused: " + std::string(host_path) + " is larger than " + std::to_string(k_max_file_bytes >> 20)
                                            + " MiB, more than passthru reads of a file");
    };
    if (have_stat && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > k_max_file_bytes) {
        return too_large();
    }
    // One byte past the limit tells a file that grew (or a size that
    // st_size does not show, as in procfs) from one that fits.
    auto out = read_fd_all(fd.get(), k_max_file_bytes + 1);
    if (!out) {
        return tl::unexpected(io_error("cannot read", host_path, errno));
    }
    if (out->size() > k_max_file_bytes) {
        return too_large();
    }
    note(host_path, Access::read, &*out);
    return std::move(*out);
}

Result<std::string> HostFs::read_records(std::string_view host_path, std::size_t max_bytes) const
{
    const UniqueFd fd(open_in_root(host_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (!fd.ok()) {
        return tl::unexpected(io_error("cannot read", host_path, errno));
    }
    std::string out;
    char buf[8192]; // a /dev/kmsg record is at most 8 KiB (a larger buffer is never filled by one read)
    while (out.size() < max_bytes) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR || errno == EPIPE) {
                continue; // EPIPE: the record was overwritten; the next read gives the next one
            }
            if (errno == EAGAIN) {
                break; // the end of the buffer: reading on would wait for new messages
            }
            return tl::unexpected(io_error("cannot read", host_path, errno));
        }
        if (n == 0) {
            break;
        }
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

std::optional<std::string> HostFs::read_attr(std::string_view host_path) const
{
    auto out = read_file(host_path);
    if (!out) {
        return std::nullopt;
    }
    trim_right(*out);
    return std::move(*out);
}

Result<std::string> HostFs::read_link(std::string_view host_path) const
{
    note(host_path, Access::link);
    std::string name;
    const UniqueFd dir(open_parent(host_path, name, O_PATH));
    if (!dir.ok()) {
        return tl::unexpected(io_error("cannot read link", host_path, errno));
    }
    char buf[4096];
    const ssize_t n = ::readlinkat(dir.get(), name.c_str(), buf, sizeof buf);
    if (n < 0 || static_cast<std::size_t>(n) >= sizeof buf) {
        return tl::unexpected(io_error("cannot read link", host_path, n < 0 ? errno : ENAMETOOLONG));
    }
    return std::string(buf, static_cast<std::size_t>(n));
}

Result<std::vector<std::string>> HostFs::list_dir(std::string_view host_path) const
{
    note(host_path, Access::list);
    const UniqueFd fd(open_in_root(host_path, O_RDONLY | O_DIRECTORY));
    if (!fd.ok()) {
        return tl::unexpected(io_error("cannot list", host_path, errno));
    }
    auto names = list_fd(fd.get());
    if (!names) {
        return tl::unexpected(io_error("cannot list", host_path, errno));
    }
    return std::move(*names);
}

Result<HostDir> HostFs::open_dir(std::string_view host_path, std::optional<std::string> known_path) const
{
    note(host_path, Access::stat);
    UniqueFd fd(open_in_root(host_path, O_RDONLY | O_DIRECTORY));
    if (!fd.ok()) {
        return tl::unexpected(io_error("cannot open directory", host_path, errno));
    }
    if (known_path) {
        return HostDir(fd.release(), std::move(*known_path), m_log);
    }
    auto resolved = resolve_impl(host_path, true);
    if (!resolved) {
        return tl::unexpected(resolved.error());
    }
    return HostDir(fd.release(), std::move(*resolved), m_log);
}

HostDevice HostFs::open_char_device(std::string_view host_path) const
{
    // O_PATH first: a path that is not a character device is never opened
    // read-write; the second fstat catches a swap between the two opens.
    struct stat st
    {};
    const UniqueFd probe(open_in_root(host_path, O_PATH));
    if (!probe.ok()) {
        return HostDevice(-1, errno);
    }
    if (::fstat(probe.get(), &st) != 0) {
        return HostDevice(-1, errno);
    }
    if (!S_ISCHR(st.st_mode)) {
        return HostDevice(-1, ENOTTY);
    }
    UniqueFd fd(open_in_root(host_path, O_RDWR | O_CLOEXEC | O_NOCTTY));
    if (!fd.ok()) {
        return HostDevice(-1, errno);
    }
    struct stat again
    {};
    if (::fstat(fd.get(), &again) != 0 || !S_ISCHR(again.st_mode) || again.st_rdev != st.st_rdev) {
        return HostDevice(-1, ENOTTY);
    }
    return HostDevice(fd.release(), 0);
}

HostDevice& HostDevice::operator=(HostDevice&& other) noexcept
{
    if (this != &other) {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
        m_fd = other.m_fd;
        m_err = other.m_err;
        other.m_fd = -1;
    }
    return *this;
}

HostDevice::~HostDevice()
{
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

bool HostFs::exists(std::string_view host_path) const
{
    note(host_path, Access::stat);
    return UniqueFd(open_in_root(host_path, O_PATH)).ok();
}

bool HostFs::is_dir(std::string_view host_path) const
{
    note(host_path, Access::stat);
    return UniqueFd(open_in_root(host_path, O_PATH | O_DIRECTORY)).ok();
}

FileInfo HostFs::stat(std::string_view host_path) const
{
    note(host_path, Access::stat);
    struct stat st
    {};
    std::string name;
    if (split_components(host_path).empty()) {
        if (::fstat(*m_root_fd, &st) != 0) {
            return {};
        }
        return file_info(st);
    }
    const UniqueFd dir(open_parent(host_path, name, O_PATH));
    if (!dir.ok() || ::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return {};
    }
    return file_info(st);
}

} // namespace passthru::util
