// SPDX-License-Identifier: GPL-2.0-or-later
// HostFs (util/host_fs.hpp): every change to the host. write_file_atomic (a
// temporary file, fsync, renameat in the same directory descriptor, fsync of
// the directory), remove_file, create_directories (mkdir -p),
// remove_directory, sync_directory and the lock file (HostLock, try_lock,
// remove_lock_file). Each works with *at() calls on a descriptor of the parent
// directory opened inside the root; the last component is never followed.
#include "util/host_fs.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "util/fault.hpp"
#include "util/host_fs_detail.hpp"
#include "util/temp_name.hpp"

namespace passthru::util {

namespace detail {

// Writes all of content to fd; 0 or the errno of the failure.
int write_all(int fd, std::string_view content)
{
    std::size_t off = 0;
    while (off < content.size()) {
        const ssize_t n = ::write(fd, content.data() + off, content.size() - off);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno;
        }
        off += static_cast<std::size_t>(n);
    }
    return 0;
}

} // namespace detail

using detail::io_error;
using detail::join_components;
using detail::k_max_symlinks;
using detail::split_components;
using detail::UniqueFd;
using detail::write_all;

namespace {

constexpr int k_lock_attempts = 8; // opens of a lock file that its holder keeps unlinking

// fsync(2) of an open directory; 0 or the errno of the failure.
int fsync_dir_fd(int dir_fd)
{
    if (::fsync(dir_fd) == 0) {
        return 0;
    }
    // Some filesystems (and pmxcfs) do not support fsync on directories.
    return (errno == EINVAL || errno == EROFS) ? 0 : errno;
}

// The mode of the directories passthru makes, as Debian ships /etc/modprobe.d,
// /etc/default/grub.d and the other directories it writes in.
constexpr mode_t k_dir_mode = 0755;

// A new directory gets `mode` whatever the umask: opened without following
// a link swapped in meanwhile, changed only when it differs (pmxcfs refuses
// chmod on its directories, which are 0755 already). 0 or an errno.
int set_dir_mode(int parent_fd, const std::string& name, mode_t mode)
{
    const UniqueFd dir(::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st
    {};
    if (!dir.ok() || ::fstat(dir.get(), &st) != 0) {
        return errno;
    }
    if ((st.st_mode & 07777) != mode && ::fchmod(dir.get(), mode) != 0) {
        return errno;
    }
    return 0;
}

} // namespace

// Each missing directory is made with mkdirat(2) in a descriptor of its
// parent, itself opened inside the root: "mkdir -p" that no symlink swapped
// in meanwhile can lead outside the root. A dangling symlink on the way is
// followed inside the root (its target is created), as the kernel would.
Result<void> HostFs::rename_in_dir(std::string_view host_path, std::string_view to) const
{
    std::string name;
    const UniqueFd dir(open_parent(host_path, name, O_RDONLY));
    if (!dir.ok()) {
        return tl::unexpected(io_error("cannot open the directory of", host_path, errno));
    }
    if (to.empty() || to.find('/') != std::string_view::npos || to == "." || to == "..") {
        return fail(Errc::usage, "rename_in_dir: '" + std::string(to) + "' is not a file name");
    }
    if (::renameat(dir.get(), name.c_str(), dir.get(), std::string(to).c_str()) != 0) {
        const int err = errno;
        if (err == ENOENT) {
            return fail(Errc::not_found, std::string(host_path) + " does not exist");
        }
        return tl::unexpected(io_error("cannot rename", host_path, err));
    }
    if (const int err = fsync_dir_fd(dir.get()); err != 0) {
        return tl::unexpected(io_error("cannot fsync the directory of", host_path, err));
    }
    return {};
}

Result<void> HostFs::create_directories(std::string_view host_path) const
{
    std::vector<std::string> todo = split_components(host_path);
    std::vector<std::string> prefix;
    int links = 0;
    for (std::size_t i = 0; i < todo.size(); ++i) {
        const std::string& comp = todo[i];
        const UniqueFd parent(open_in_root(join_components(prefix), O_PATH | O_DIRECTORY));
        const int open_err = errno;
        prefix.push_back(comp);
        if (comp == "." || comp == "..") {
            continue;
        }
        if (!parent.ok()) {
            return tl::unexpected(io_error("cannot create directory", join_components(prefix), open_err));
        }
        if (::mkdirat(parent.get(), comp.c_str(), 0755) == 0) {
            if (const int err = set_dir_mode(parent.get(), comp, k_dir_mode); err != 0) {
                return tl::unexpected(io_error("cannot set the mode of directory", join_components(prefix), err));
            }
            continue;
        }
        if (errno != EEXIST) {
            return tl::unexpected(io_error("cannot create directory", join_components(prefix), errno));
        }
        char buf[4096];
        const ssize_t n = ::readlinkat(parent.get(), comp.c_str(), buf, sizeof buf);
        if (n <= 0 || static_cast<std::size_t>(n) >= sizeof buf || UniqueFd(open_in_root(join_components(prefix), O_PATH)).ok()) {
            continue; // not a dangling link: the next mkdirat says what is wrong
        }
        if (++links > k_max_symlinks) {
            return fail(Errc::io, "too many levels of symbolic links in " + std::string(host_path));
        }
        // Restart with the link replaced by its target (relative to its directory).
        prefix.pop_back();
        std::vector<std::string> next = split_components(std::string(buf, static_cast<std::size_t>(n)));
        if (buf[0] != '/') {
            next.insert(next.begin(), prefix.begin(), prefix.end());
        }
        next.insert(next.end(), todo.begin() + static_cast<std::ptrdiff_t>(i) + 1, todo.end());
        todo = std::move(next);
        prefix.clear();
        i = static_cast<std::size_t>(-1);
    }
    return {};
}

namespace {

// A new temporary file for an atomic replace of `name`, created in the
// directory descriptor dir_fd with O_CREAT | O_EXCL | O_NOFOLLOW (so nothing
// planted at its name is followed or reused); its name in `tmp`.
int create_temp(int dir_fd, const std::string& name, std::string& tmp)
{
    std::random_device rd;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
        tmp = temp_name(name, static_cast<unsigned>(rd()));
        fd = ::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 && errno != EEXIST) {
            break;
        }
    }
    return fd;
}

// What a temporary file gets: the owner and mode to keep (of the file it
// replaces; EPERM tolerated), or to set exactly, or only a mode.
struct TempOwner
{
    std::optional<FileOwnership> own;
    bool exact = false;
    mode_t new_mode = 0644;
};

// Writes content, owner and mode into the temporary file fd (closing it);
// 0 or the errno of the failure, with *what saying which step failed.
int fill_temp(int fd, std::string_view content, const TempOwner& owner, FsSync sync, const char** what)
{
    UniqueFd file(fd);
    *what = "cannot write";
    if (const int err = write_all(file.get(), content); err != 0) {
        return err;
    }
    if (owner.own) {
        *what = "cannot set owner of";
        if (::fchown(file.get(), owner.own->uid, owner.own->gid) != 0 && (owner.exact || errno != EPERM)) {
            return errno;
        }
    }
    *what = "cannot set mode of";
    if (::fchmod(file.get(), owner.own ? (owner.own->mode & 07777) : owner.new_mode) != 0) {
        return errno;
    }
    *what = "cannot fsync";
    if (sync == FsSync::yes && ::fsync(file.get()) != 0) {
        return errno;
    }
    *what = "cannot write";
    return ::close(file.release()) == 0 ? 0 : errno;
}

} // namespace

Result<void> HostFs::write_file_atomic(std::string_view host_path, std::string_view content, mode_t new_mode, FsSync sync,
                                       const std::optional<FileOwnership>& exact) const
{
    // The directory is opened once, inside the root (it may be reached
    // through symlinks there); the check of the target, the temporary file,
    // the rename and the fsync all happen in that one descriptor, so a
    // directory swapped for a symlink meanwhile cannot redirect any of them.
    // The target itself is never followed.
    std::string name;
    const UniqueFd dir(open_parent(host_path, name, O_RDONLY));
    if (!dir.ok()) {
        return tl::unexpected(io_error("cannot open the directory of", host_path, errno));
    }
    struct stat st
    {};
    bool existed = false;
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode)) {
            return tl::unexpected(Error(Errc::precondition, "refusing to replace " + std::string(host_path) + ": it is a symbolic link")
                                      .with_hint("replace the link with a regular file, or edit the file it points to by hand"));
        }
        if (!S_ISREG(st.st_mode)) {
            return fail(Errc::precondition, "refusing to replace " + std::string(host_path) + ": not a regular file");
        }
        existed = true;
    }
    PASSTHRU_TRY(fault::check("write", host_path));
    std::string tmp;
    const int fd = create_temp(dir.get(), name, tmp);
    if (fd < 0) {
        return tl::unexpected(io_error("cannot create a temporary file next to", host_path, errno));
    }
    TempOwner owner{exact, exact.has_value(), new_mode};
    if (!exact && existed) {
        owner.own = FileOwnership{static_cast<mode_t>(st.st_mode & 07777), st.st_uid, st.st_gid};
    }
    const char* what = "";
    if (const int err = fill_temp(fd, content, owner, sync, &what); err != 0) {
        ::unlinkat(dir.get(), tmp.c_str(), 0);
        return tl::unexpected(io_error(what, host_path, err));
    }
    // Between the temporary file and the rename: a kill here leaves the
    // temporary file, which recovery and rollback find by its name (temp_name.hpp).
    if (auto injected = fault::check("rename", host_path); !injected) {
        ::unlinkat(dir.get(), tmp.c_str(), 0);
        return tl::unexpected(injected.error());
    }
    if (::renameat(dir.get(), tmp.c_str(), dir.get(), name.c_str()) != 0) {
        const int err = errno;
        ::unlinkat(dir.get(), tmp.c_str(), 0);
        return tl::unexpected(io_error("cannot rename into place", host_path, err));
    }
    if (sync == FsSync::yes) {
        if (const int err = fsync_dir_fd(dir.get()); err != 0) {
            return tl::unexpected(io_error("cannot fsync the directory of", host_path, err));
        }
    }
    return {};
}

Result<void> HostFs::remove_file(std::string_view host_path) const
{
    std::string name;
    const UniqueFd dir(open_parent(host_path, name, O_RDONLY));
    if (!dir.ok()) {
        return tl::unexpected(io_error("cannot fsync the directory of", host_path, errno));
    }
    PASSTHRU_TRY(fault::check("remove", host_path));
    if (::unlinkat(dir.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
        return tl::unexpected(io_error("cannot remove", host_path, errno));
    }
    if (const int err = fsync_dir_fd(dir.get()); err != 0) {
        return tl::unexpected(io_error("cannot fsync the directory of", host_path, err));
    }
    return {};
}

Result<void> HostFs::write_attr(std::string_view host_path, std::string_view text) const
{
    const UniqueFd fd(open_in_root(host_path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd.ok()) {
        return tl::unexpected(io_error("cannot open", host_path, errno));
    }
    const ssize_t n = ::write(fd.get(), text.data(), text.size());
    if (n < 0) {
        return tl::unexpected(io_error("cannot write to", host_path, errno));
    }
    if (static_cast<std::size_t>(n) != text.size()) {
        return fail(Errc::io, "cannot write to " + std::string(host_path) + ": only " + std::to_string(n) + " of "
                                  + std::to_string(text.size()) + " bytes written");
    }
    return {};
}

// ---- directories and locks ----------------------------------------------

Result<void> HostFs::remove_lock_file(std::string_view host_path) const
{
    std::string name;
    const UniqueFd dir(open_parent(host_path, name, O_PATH));
    if (!dir.ok() || (::unlinkat(dir.get(), name.c_str(), 0) != 0 && errno != ENOENT)) {
        return tl::unexpected(io_error("cannot remove", host_path, errno));
    }
    return {};
}

Result<void> HostFs::remove_directory(std::string_view host_path) const
{
    std::string name;
    const UniqueFd dir(open_parent(host_path, name, O_RDONLY));
    if (!dir.ok()) {
        return tl::unexpected(io_error("cannot fsync the directory of", host_path, errno));
    }
    PASSTHRU_TRY(fault::check("rmdir", host_path));
    if (::unlinkat(dir.get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
        return tl::unexpected(io_error("cannot remove directory", host_path, errno));
    }
    if (const int err = fsync_dir_fd(dir.get()); err != 0) {
        return tl::unexpected(io_error("cannot fsync the directory of", host_path, err));
    }
    return {};
}

Result<void> HostFs::sync_directory(std::string_view host_path) const
{
    const UniqueFd dir(open_in_root(host_path, O_RDONLY | O_DIRECTORY));
    if (!dir.ok()) {
        return tl::unexpected(io_error("cannot fsync directory", host_path, errno));
    }
    if (const int err = fsync_dir_fd(dir.get()); err != 0) {
        return tl::unexpected(io_error("cannot fsync directory", host_path, err));
    }
    return {};
}

HostLock& HostLock::operator=(HostLock&& other) noexcept
{
    if (this != &other) {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
        m_fd = other.m_fd;
        other.m_fd = -1;
    }
    return *this;
}

HostLock::~HostLock()
{
    if (m_fd >= 0) {
        ::close(m_fd); // releases the flock
    }
}

Result<HostLock> HostFs::try_lock(std::string_view host_path, LockCreate create) const
{
    std::string name;
    const UniqueFd dir(open_parent(host_path, name, O_PATH));
    if (!dir.ok()) {
        return tl::unexpected(io_error("cannot open lock file", host_path, errno));
    }
    const int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create == LockCreate::yes ? O_CREAT : 0);
    // The holder may unlink the lock file before it lets go (apply::JournalLock):
    // a lock on a file that is no longer at the path is no lock, so open again.
    for (int attempt = 0; attempt < k_lock_attempts; ++attempt) {
        UniqueFd fd(::openat(dir.get(), name.c_str(), flags, 0600));
        if (!fd.ok()) {
            return tl::unexpected(io_error("cannot open lock file", host_path, errno));
        }
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
            const int err = errno;
            if (err == EWOULDBLOCK) {
                return fail(Errc::conflict, "another passthru is running (it holds " + std::string(host_path) + ")");
            }
            return tl::unexpected(io_error("cannot lock", host_path, err));
        }
        struct stat held
        {};
        struct stat now
        {};
        if (::fstat(fd.get(), &held) == 0 && ::fstatat(dir.get(), name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && held.st_dev == now.st_dev
            && held.st_ino == now.st_ino) {
            return HostLock(fd.release());
        }
    }
    return fail(Errc::conflict, "another passthru is running (" + std::string(host_path) + " keeps changing)");
}

} // namespace passthru::util
