// SPDX-License-Identifier: GPL-2.0-or-later
// save_local_file (util/host_fs.hpp): saves a file the operator named on this
// machine (plan --out FILE), not a host path. A temporary file with a random
// name, created O_EXCL | O_NOFOLLOW in a descriptor of FILE's directory, is
// renamed onto FILE in that descriptor; only a regular file there is replaced,
// and the temporary files an earlier killed save left are swept afterwards.
#include "util/host_fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "util/host_fs_detail.hpp"

namespace passthru::util {

using detail::io_error;
using detail::write_all;

namespace {

// A random suffix for a temporary file name (getrandom(2); never predictable).
std::string random_suffix()
{
    unsigned char bytes[8] = {};
    std::size_t got = 0;
    while (got < sizeof bytes) {
        const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n > 0) {
            got += static_cast<std::size_t>(n);
        } else if (errno != EINTR) {
            std::random_device rd; // only without getrandom (Linux < 3.17)
            for (auto& b : bytes) {
                b = static_cast<unsigned char>(rd());
            }
            break;
        }
    }
    static const char* const k_hex = "0123456789abcdef";
    std::string out;
    for (const unsigned char b : bytes) {
        out += k_hex[b >> 4];
        out += k_hex[b & 15];
    }
    return out;
}

// What is at FILE may be replaced only when it is a regular file (or
// nothing): a rename onto a device (/dev/null), a FIFO, a socket or a
// symlink would replace that node, not write to it.
Result<void> local_target_refusal(int dfd, const std::string& name, const std::filesystem::path& path)
{
    struct stat st
    {};
    if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) {
            return {};
        }
        return tl::unexpected(io_error("cannot inspect", path.string(), errno));
    }
    if (S_ISREG(st.st_mode)) {
        return {};
    }
    if (S_ISDIR(st.st_mode)) {
        return fail(Errc::usage, path.string() + " is a directory");
    }
    const char* kind = S_ISLNK(st.st_mode)    ? "a symbolic link"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                                              : "a socket";
    return fail(Errc::precondition, path.string() + " is " + kind + ", not a regular file: refusing to replace it");
}

// Removes the temporary files an earlier save_local_file of the same name
// left when it was killed before its rename: ".NAME.passthru-" and 16 hex
// digits, regular, owned by this user (never another user's file). Best
// effort: what cannot be removed stays.
void sweep_local_temps(int dfd, const std::string& name)
{
    const int fd = ::dup(dfd);
    DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
    if (d == nullptr) {
        if (fd >= 0) {
            ::close(fd);
        }
        return;
    }
    const std::string prefix = "." + name + ".passthru-";
    std::vector<std::string> stale;
    while (const dirent* e = ::readdir(d)) {
        const std::string_view entry(e->d_name);
        if (entry.size() != prefix.size() + 16 || !entry.starts_with(prefix)
            || entry.substr(prefix.size()).find_first_not_of("0123456789abcdef") != std::string_view::npos) {
            continue;
        }
        struct stat st
        {};
        if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid()) {
            stale.emplace_back(entry);
        }
    }
    ::closedir(d);
    for (const auto& t : stale) {
        ::unlinkat(dfd, t.c_str(), 0);
    }
}

} // namespace

Result<void> save_local_file(const std::filesystem::path& path, std::string_view content, mode_t mode)
{
    const std::string name = path.filename().string();
    if (name.empty() || name == "." || name == "..") {
        // Appended rather than "'" + string: GCC 12's -Wstringop-overflow misreads that
        // operator+ once inlined in a Release build.
        std::string what = "'";
        what += path.string();
        what += "' does not name a file";
        return fail(Errc::usage, what);
    }
    const std::string dir = path.has_parent_path() ? path.parent_path().string() : ".";
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        return tl::unexpected(io_error("cannot open the directory of", path.string(), errno));
    }
    if (auto kind = local_target_refusal(dfd, name, path); !kind) {
        ::close(dfd);
        return kind;
    }
    std::string tmp;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
        tmp = "." + name + ".passthru-" + random_suffix();
        fd = ::openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 && errno != EEXIST) {
            break;
        }
    }
    if (fd < 0) {
        const int err = errno;
        ::close(dfd);
        return tl::unexpected(io_error("cannot create a temporary file next to", path.string(), err));
    }
    int err = write_all(fd, content);
    if (err == 0 && ::fchmod(fd, mode) != 0) {
        err = errno;
    }
    if (err == 0 && ::fsync(fd) != 0) {
        err = errno;
    }
    if (::close(fd) != 0 && err == 0) {
        err = errno;
    }
    if (err == 0) {
        // Checked again: FILE may have become a device or a link meanwhile.
        if (auto kind = local_target_refusal(dfd, name, path); !kind) {
            ::unlinkat(dfd, tmp.c_str(), 0);
            ::close(dfd);
            return kind;
        }
    }
    if (err == 0 && ::renameat(dfd, tmp.c_str(), dfd, name.c_str()) != 0) {
        err = errno;
    }
    if (err != 0) {
        ::unlinkat(dfd, tmp.c_str(), 0);
        ::close(dfd);
        return tl::unexpected(io_error("cannot write", path.string(), err));
    }
    sweep_local_temps(dfd, name);
    ::fsync(dfd);
    ::close(dfd);
    return {};
}

} // namespace passthru::util
