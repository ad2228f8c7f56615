// SPDX-License-Identifier: GPL-2.0-or-later
// A capture's members as a tar archive (libarchive, POSIX pax format), laid
// out as a --root tree: "etc/hostname", "sys/bus/pci/devices/...". Built in
// memory; the CLI saves it with util::save_local_file (temporary file and
// rename: never a partial archive at FILE).
#pragma once

#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "capture/collect.hpp"
#include "util/error.hpp"

namespace passthru::capture {

enum class Compression
{
    none, // FILE.tar
    gzip, // FILE.tar.gz, FILE.tgz, and any other name
    xz,   // FILE.tar.xz, FILE.txz
};

// The compression a file name asks for: by its suffix, gzip by default.
Compression compression_for(std::string_view file_name);

// The archive's bytes. Every member gets owner root:root and mtime `when`.
Result<std::string> write_archive(const std::vector<Member>& members, Compression compression, std::time_t when);

} // namespace passthru::capture
