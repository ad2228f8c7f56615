// SPDX-License-Identifier: GPL-2.0-or-later
// passthru capture: the files of a host that passthru reads, as a tarball
// laid out as a --root tree, with private data removed (capture/redact.hpp).
// The CLI runs scan and plan with a util::ReadLog on the HostFs, and this
// room packs what was noted: capture/collect.* finds the members,
// capture/archive.* writes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "capture/archive.hpp"
#include "capture/redact.hpp"
#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::capture {

// The manifest at the top of every capture.
inline constexpr const char* k_manifest_name = "CAPTURE.json";

// The VMIDs of the VM configs in /etc/pve/qemu-server, ascending.
std::vector<std::uint64_t> vm_ids(const util::HostFs& fs);

// Reads what explaining a VM's start needs besides scan and plan (so a
// recording HostFs notes it): every VM config of /etc/pve/qemu-server,
// Proxmox VE's task list (/var/log/pve/tasks/index and active) and the log
// of every qmstart task. The task directories are listed without noting
// them: only the qmstart logs are packed.
void read_vm_history(const util::HostFs& fs);

struct CaptureResult
{
    std::string archive;          // the tarball's bytes
    std::string manifest;         // CAPTURE.json, as packed
    std::size_t files = 0;        // regular files, CAPTURE.json not counted
    std::size_t placeholders = 0; // of which only listed or stat'ed: packed empty
    std::size_t directories = 0;
    std::size_t symlinks = 0;
    std::map<RedactKind, std::size_t> redacted; // replacements by kind
    std::size_t redacted_files = 0;             // files with any replacement
    std::vector<std::string> skipped;           // names not UTF-8, escaped (\xNN): not packed
};

struct CaptureOptions
{
    RedactOptions redact;
    Compression compression = Compression::gzip;
    std::time_t when = 0; // the members' mtime and the manifest's date
    std::string version;  // passthru's version, for the manifest
};

// Packs what `log` noted, read again through `fs` (which must not be
// recording), redacted, with the manifest at the top.
Result<CaptureResult> pack(const util::HostFs& fs, const std::map<std::string, util::ReadLog::Entry>& log, const CaptureOptions& options);

} // namespace passthru::capture
