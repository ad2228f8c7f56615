// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <string>

#include "util/error.hpp"

// Files of the operator's own machine that are not part of the host under --root:
// a file the operator names on the command line (apply --plan FILE), and a private
// scratch file that hands a library text passthru read through HostFs. The third door
// besides HostFs and CommandRunner (scripts/check-layering.py).
namespace passthru::util {

// The whole text of the regular file at path, at most max bytes. The open never waits
// (a FIFO would block forever) and only a regular file is read (/dev/zero never ends).
// Errors: Errc::usage, with the reason as the message ("not a regular file", ...).
Result<std::string> read_local_file(const std::string& path, std::size_t max);

// Whether path is a regular file of at most max bytes, looked at without opening it (a
// FIFO's writer is not woken, a device not acted on): for a file that a library opens by
// name itself (libvirt's test driver, --connect test:///PATH). Errors: as read_local_file.
Result<void> check_local_file(const std::string& path, std::size_t max);

// Whether anything (a file, a directory, a dangling symlink) is at path on this
// machine; the last component is not followed (capture FILE refuses to replace one).
bool local_entry_exists(const std::string& path);

// The path of this process's own binary (/proc/self/exe), empty when it cannot be told.
std::string own_executable_path();

// A file only this process can reach, holding the text put() last gave it: an anonymous
// memory file (memfd_create(2)) named as /proc/self/fd/N, so nothing is left behind
// whatever ends the process; where that cannot be opened by name (no memfd, no /proc),
// one file in a fresh mode-0700 directory (mkdtemp), removed when the object goes.
class PrivateTextFile
{
public:
    explicit PrivateTextFile(std::string name);
    PrivateTextFile(const PrivateTextFile&) = delete;
    PrivateTextFile& operator=(const PrivateTextFile&) = delete;
    PrivateTextFile(PrivateTextFile&&) = delete;
    PrivateTextFile& operator=(PrivateTextFile&&) = delete;
    ~PrivateTextFile();

    // Replaces the file's text and returns the path a library opens it by.
    std::string put(const std::string& text) const;

private:
    std::string fd_path() const;

    std::string m_name;
    int m_fd = -1;
    std::string m_dir; // the fallback directory, when there is no memfd
};

} // namespace passthru::util
