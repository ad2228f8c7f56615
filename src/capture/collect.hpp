// SPDX-License-Identifier: GPL-2.0-or-later
// From what a command read of the host (util::ReadLog) to the members of a
// --root tree that lets passthru read the same again: every symlink on the
// way to a path as a symlink, every directory, each file with the bytes that
// were read of it. Host access through HostFs only, and only below its root.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "util/host_fs.hpp"

namespace passthru::capture {

enum class MemberType
{
    file,
    directory,
    symlink
};

struct Member
{
    std::string path; // host path, "/sys/bus/pci/devices/0000:01:00.0"
    MemberType type = MemberType::file;
    std::string data;         // a file's contents or a symlink's target
    mode_t mode = 0644;       // permission bits
    bool placeholder = false; // a file only listed or stat'ed, never read: packed empty
};

// What a capture packs beside the files read: the module indexes of the
// kernel release directories under /lib/modules that were looked at (libkmod
// reads modules.*.bin itself, from the name HostFs::local gave it).
inline constexpr std::size_t k_max_module_index_bytes = std::size_t{64} << 20;

// The members for the paths in `log`, sorted by path, each directory before
// what it holds. `fs` must not be recording (its own stats and reads would
// be noted). Never reads a file that was not read, except the module
// indexes: a file only stat'ed or listed is an empty placeholder, and device
// nodes, FIFOs and sockets are left out.
std::vector<Member> collect_members(const util::HostFs& fs, const std::map<std::string, util::ReadLog::Entry>& log);

} // namespace passthru::capture
