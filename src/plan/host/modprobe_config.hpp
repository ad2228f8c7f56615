// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to plan/host/: the host's effective modprobe.d configuration, read
// by libkmod from the text of files read under the root (docs/facts.md:
// modprobe-config).
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "util/host_fs.hpp"

namespace passthru::plan::detail {

enum class ModprobeKind
{
    blacklist,
    options,
    install,
    softdep,
    alias,
};

// One directive as libkmod reports it.
struct ModprobeDirective
{
    ModprobeKind kind = ModprobeKind::blacklist;
    std::string module; // libkmod's key: the module name ('-' read as '_'); for an alias, the alias
    std::string value;  // options, install command, "pre: ... post: ...", alias target; "" for a blacklist
};

// One file kmod reads, after shadowing, with what libkmod found in it (by
// kind: blacklists, options, install commands, softdeps, aliases; each kind
// in the file's order).
struct ModprobeFile
{
    std::string path; // host path by its name in the directory (a symlink is not named by its target)
    std::vector<ModprobeDirective> directives;
};

// The directories kmod reads, in precedence order: a file name found in an
// earlier directory shadows the same name in a later one. Read on every host
// whatever its kmod release (Debian 12's kmod 30 does not know /usr/lib, but
// its /lib is /usr/lib on a merged-/usr system; Debian 13's kmod 34 reads it).
inline constexpr std::array<std::string_view, 5> k_modprobe_dirs{
    "/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/usr/lib/modprobe.d", "/lib/modprobe.d",
};

// The host's modprobe.d configuration in kmod's order (files by name), each
// file read through HostFs and its text parsed by libkmod (which never opens
// a file under the root). What libkmod adds from
// this machine's /proc/cmdline is taken out again. Throws Error(io) when
// libkmod cannot be set up.
std::vector<ModprobeFile> read_modprobe_config(const util::HostFs& fs);

} // namespace passthru::plan::detail
