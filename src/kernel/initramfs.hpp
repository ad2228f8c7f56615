// SPDX-License-Identifier: GPL-2.0-or-later
// What an initramfs image holds, read from the image itself: initramfs-tools writes
// uncompressed cpio archives (early microcode, docs/facts.md: kernel-hooks) followed by
// one compressed cpio archive (gzip, zstd, xz ...). The uncompressed parts are walked
// here (cpio "newc"), the compressed one through libarchive.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace passthru::kernel {

struct InitramfsContents
{
    // Every member's path, without a leading "./" or "/" ("usr/lib/modules/6.8.12-4-pve/...").
    std::set<std::string> paths;
    // The content of each member asked for by path (as in `paths`), when it is a regular file.
    std::map<std::string, std::string> files;
};

// Reads the image's bytes; `want` lists the members whose content is kept (at most 1 MiB
// each). `where` names the image in errors: Errc::parse when it is no cpio archive, is
// cut short, or its compression is unknown.
Result<InitramfsContents> read_initramfs(std::string_view image, const std::vector<std::string>& want, const std::string& where);

} // namespace passthru::kernel
