// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/local_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

#include "util/host_fs.hpp"

namespace passthru::util {

bool local_entry_exists(const std::string& path)
{
    struct stat st
    {};
    return ::lstat(path.c_str(), &st) == 0;
}

Result<void> check_local_file(const std::string& path, std::size_t max)
{
    const int pfd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (pfd < 0) {
        return tl::unexpected(Error(Errc::usage, std::string("cannot read the file: ") + std::strerror(errno)));
    }
    struct stat st
    {};
    const bool regular = ::fstat(pfd, &st) == 0 && S_ISREG(st.st_mode);
    ::close(pfd);
    if (!regular) {
        return tl::unexpected(Error(Errc::usage, "not a regular file"));
    }
    if (static_cast<std::uint64_t>(st.st_size) > max) {
        return tl::unexpected(Error(Errc::usage, "larger than " + std::to_string(max >> 20) + " MiB"));
    }
    return {};
}

Result<std::string> read_local_file(const std::string& path, std::size_t max)
{
    // Looked at before it is opened: opening a device can act (opening
    // /dev/watchdog arms it) and opening a FIFO wakes its writer. O_PATH
    // opens nothing; the file is then opened through that very descriptor.
    const int pfd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (pfd < 0) {
        return tl::unexpected(Error(Errc::usage, std::string("cannot read the file: ") + std::strerror(errno)));
    }
    const std::unique_ptr<const int, void (*)(const int*)> pcloser(&pfd, [](const int* f) { ::close(*f); });
    struct stat st
    {};
    if (::fstat(pfd, &st) != 0 || !S_ISREG(st.st_mode)) {
        return tl::unexpected(Error(Errc::usage, "not a regular file"));
    }
    int fd = ::open(("/proc/self/fd/" + std::to_string(pfd)).c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC); // no /proc: by name, checked below
    }
    if (fd < 0) {
        return tl::unexpected(Error(Errc::usage, std::string("cannot read the file: ") + std::strerror(errno)));
    }
    const std::unique_ptr<const int, void (*)(const int*)> closer(&fd, [](const int* f) { ::close(*f); });
    struct stat opened
    {};
    if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode) || opened.st_dev != st.st_dev || opened.st_ino != st.st_ino) {
        return tl::unexpected(Error(Errc::usage, "not a regular file"));
    }
    std::string text;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return tl::unexpected(Error(Errc::usage, std::string("cannot read the file: ") + std::strerror(errno)));
        }
        if (n == 0) {
            return text;
        }
        if (text.size() + static_cast<std::size_t>(n) > max) {
            return tl::unexpected(Error(Errc::usage, "larger than " + std::to_string(max >> 20) + " MiB"));
        }
        text.append(buf, static_cast<std::size_t>(n));
    }
}

PrivateTextFile::PrivateTextFile(std::string name) : m_name(std::move(name))
{
    m_fd = ::memfd_create(m_name.c_str(), MFD_CLOEXEC);
    struct stat st
    {};
    if (m_fd >= 0 && ::stat(fd_path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        return;
    }
    if (m_fd >= 0) {
        ::close(m_fd);
        m_fd = -1;
    }
    std::string tmpl = (std::filesystem::temp_directory_path() / "passthru-private-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
        throw Error(Errc::io, "cannot create a private directory in " + dir_name(tmpl));
    }
    m_dir = tmpl;
}

PrivateTextFile::~PrivateTextFile()
{
    if (m_fd >= 0) {
        ::close(m_fd);
    }
    if (!m_dir.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(m_dir, ec);
    }
}

std::string PrivateTextFile::put(const std::string& text) const
{
    std::string path = m_fd >= 0 ? fd_path() : m_dir + "/" + m_name;
    const int fd = m_fd >= 0 ? m_fd : ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && ::ftruncate(fd, 0) == 0;
    for (std::size_t done = 0; ok && done < text.size();) {
        const ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
        ok = n > 0;
        done += ok ? static_cast<std::size_t>(n) : 0;
    }
    if (fd >= 0 && fd != m_fd) {
        ::close(fd);
    }
    if (!ok) {
        throw Error(Errc::io, "cannot write the private file " + path);
    }
    return path;
}

std::string PrivateTextFile::fd_path() const
{
    return "/proc/self/fd/" + std::to_string(m_fd);
}

std::string own_executable_path()
{
    std::error_code ec;
    auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : path.string();
}

} // namespace passthru::util
