// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to HostFs (util/host_fs.hpp): the helpers that its implementation
// files, util/host_fs*.cpp, share. Nothing outside them includes it.
#pragma once

#include <unistd.h>

#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace passthru::util::detail {

inline constexpr int k_max_symlinks = 40; // same limit as the kernel's path walk

// The components of a path, empty ones dropped ("/a//b/" is {"a", "b"}).
std::vector<std::string> split_components(std::string_view path);
// The host path of components ({"a", "b"} is "/a/b", {} is "/").
std::string join_components(const std::vector<std::string>& parts);
// "WHAT PATH: strerror(err)"; Errc::not_found for ENOENT, else Errc::io.
Error io_error(std::string_view what, std::string_view path, int err);
// Writes all of content to fd; 0 or the errno of the failure.
int write_all(int fd, std::string_view content);

// A file descriptor closed when it goes out of scope.
class UniqueFd
{
public:
    explicit UniqueFd(int fd = -1) noexcept : m_fd(fd) {}
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd()
    {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
    }
    int get() const noexcept { return m_fd; }
    bool ok() const noexcept { return m_fd >= 0; }
    int release() noexcept
    {
        const int fd = m_fd;
        m_fd = -1;
        return fd;
    }

private:
    int m_fd;
};

} // namespace passthru::util::detail
