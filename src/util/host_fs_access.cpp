// SPDX-License-Identifier: GPL-2.0-or-later
// HostFs::write_denied: whether a tree can be written at all, asked once
// before a command that writes it starts (cli/root_guard.hpp).
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <string>

#include "util/host_fs.hpp"

namespace passthru::util {

std::optional<std::string> HostFs::write_denied(std::initializer_list<const char*> dirs) const
{
    struct statvfs vfs
    {};
    if (::fstatvfs(*m_root_fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY) != 0U) {
        return m_root.string() + " is on a read-only file system";
    }
    if (::faccessat(*m_root_fd, ".", W_OK, AT_EACCESS) != 0) {
        return m_root.string() + " is not writable for this user";
    }
    for (const char* dir : dirs) {
        if (::faccessat(*m_root_fd, dir, F_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) == 0
            && ::faccessat(*m_root_fd, dir, W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) != 0) {
            return (m_root / dir).string() + " is not writable for this user";
        }
    }
    return std::nullopt;
}

} // namespace passthru::util
