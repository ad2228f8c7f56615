// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace passthru::util {

enum class FsSync
{
    no,
    yes
};

// Owner, group and mode a write sets exactly: rollback puts a journaled file
// back as it was (PVE's /etc/pve/qemu-server/101.conf is root:www-data 0640).
struct FileOwnership
{
    mode_t mode = 0644; // permission bits
    uid_t uid = 0;
    gid_t gid = 0;
};

enum class FileType
{
    missing,
    regular,
    directory,
    symlink,
    other
};

struct FileInfo
{
    FileType type = FileType::missing;
    mode_t mode = 0; // permission bits only
    uid_t uid = 0;
    gid_t gid = 0;
    std::uint64_t size = 0;
    // A character device (type other): its major and minor numbers (st_rdev).
    bool char_device = false;
    std::uint32_t rdev_major = 0;
    std::uint32_t rdev_minor = 0;
};

// How a command touched a host path, as HostFs::record_reads notes it
// (bits of ReadLog::Entry::access).
enum class Access : unsigned
{
    read = 1U, // the contents were read
    list = 2U, // the directory's entries were listed
    stat = 4U, // its type or existence was asked, or its name resolved
    link = 8U, // the target of the symlink itself was read
};

// Every host path a command touched through HostFs and HostDir while a log
// was set (passthru capture): the path as it was asked for (symlinks on the
// way not resolved), how, and the bytes the last read of it returned. Safe
// to note from several threads (scan reads PCI functions in parallel).
class ReadLog
{
public:
    struct Entry
    {
        unsigned access = 0; // Access bits
        std::optional<std::string> content;
    };
    void note(std::string_view host_path, Access access, const std::string* content = nullptr);
    // A copy of what was noted, by host path.
    std::map<std::string, Entry> entries() const;

private:
    mutable std::mutex m_mutex;
    std::map<std::string, Entry> m_entries;
};

// An open directory of the host (a sysfs device directory, say) whose entries
// are read by name relative to it: opened once, then one openat(2) per file.
// A name is one component ("vendor") or a relative path below the directory
// ("12/type", one openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS):
// no read can leave the directory, and no symlink is followed on the way;
// symlinks among the entries are read as links (link()), never followed.
class HostDir
{
public:
    HostDir(const HostDir&) = delete;
    HostDir& operator=(const HostDir&) = delete;
    HostDir(HostDir&& other) noexcept;
    HostDir& operator=(HostDir&& other) noexcept;
    ~HostDir();

    // Host path of the directory itself, after symlinks were resolved.
    const std::string& path() const noexcept { return m_path; }

    // Contents of a regular-file entry with trailing white space removed;
    // nullopt when the entry is missing, a link, or unreadable.
    std::optional<std::string> attr(const char* name) const;
    // Whole contents of a regular-file entry (binary safe), at most max_bytes.
    std::optional<std::string> read(const char* name, std::size_t max_bytes) const;
    // Target of a symlink entry, verbatim; nullopt when it is not a link.
    std::optional<std::string> link(const char* name) const;
    bool has(const char* name) const;
    // Names of the entries of the subdirectory `name` ("." for this one, or a
    // relative path below it), sorted; empty when missing.
    std::vector<std::string> list(const char* name) const;
    // The subdirectory `name`, one component or a relative path below this
    // directory ("pci0000:00/0000:00:01.0"); no symlink is followed on the way
    // and ".." cannot leave the directory. nullopt when missing.
    std::optional<HostDir> subdir(const std::string& name) const;

private:
    friend class HostFs;
    HostDir(int fd, std::string path, std::shared_ptr<ReadLog> log) : m_fd(fd), m_path(std::move(path)), m_log(std::move(log)) {}
    void note(const char* name, Access access, const std::string* content = nullptr) const;
    int m_fd = -1;
    std::string m_path;
    std::shared_ptr<ReadLog> m_log; // HostFs::record_reads; null: not recording
};

// An exclusive flock(2) on a host file, released when destroyed (or when the
// process dies, so a kill -9 never leaves a stale lock behind).
class HostLock
{
public:
    HostLock(const HostLock&) = delete;
    HostLock& operator=(const HostLock&) = delete;
    HostLock(HostLock&& other) noexcept : m_fd(other.m_fd) { other.m_fd = -1; }
    HostLock& operator=(HostLock&& other) noexcept;
    ~HostLock();

private:
    friend class HostFs;
    explicit HostLock(int fd) : m_fd(fd) {}
    int m_fd = -1;
};

// A character device of the host opened read-write (a /dev/vfio node), closed
// when destroyed. A failed open keeps its errno instead of an Error: for a
// device the errno is the answer the caller reads (EBUSY: another process
// holds a VFIO group; ENODEV: its driver went away).
class HostDevice
{
public:
    HostDevice() = default; // nothing opened yet: not ok(), error() 0
    HostDevice(const HostDevice&) = delete;
    HostDevice& operator=(const HostDevice&) = delete;
    HostDevice(HostDevice&& other) noexcept : m_fd(other.m_fd), m_err(other.m_err) { other.m_fd = -1; }
    HostDevice& operator=(HostDevice&& other) noexcept;
    ~HostDevice();

    bool ok() const noexcept { return m_fd >= 0; }
    // The open descriptor (for ioctl(2)); -1 when the open failed.
    int fd() const noexcept { return m_fd; }
    // The errno of the failed open; 0 when open.
    int error() const noexcept { return m_err; }

private:
    friend class HostFs;
    HostDevice(int fd, int err) : m_fd(fd), m_err(err) {}
    int m_fd = -1;
    int m_err = 0;
};

enum class LockCreate
{
    no,  // a missing lock file is Errc::not_found
    yes, // create it (mode 0600)
};

// The one gateway to the host being inspected or provisioned. Host paths are
// absolute ("/sys/bus/pci/devices"); they are looked up below root() by the
// kernel: the root is opened once (O_PATH), and every access is an openat2(2)
// on that descriptor with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS (absolute
// symlink targets are re-anchored at the root, ".." never climbs above it),
// and every change (create, rename, unlink, mkdir, rmdir, lock) an *at() call
// on a descriptor of the directory so opened, with the last component never
// followed. A fixture tree, a hostile one, or its owner swapping directories
// for symlinks while passthru runs can never make it read or write outside
// --root. The same code serves --root / (the live host). Without openat2
// (Linux < 5.6, or a seccomp filter) open() fails closed.
class HostFs
{
public:
    // Fails with Errc::not_found when root is not an existing directory, and
    // with Errc::precondition when the kernel offers no openat2(2).
    static Result<HostFs> open(const std::filesystem::path& root);

    const std::filesystem::path& root() const noexcept { return m_root; }
    // True when the root is the real "/": commands then run for real.
    bool is_live() const noexcept { return m_live; }
    // Why this user cannot write under the root, or nullopt: its file system
    // is mounted read-only (fstatvfs ST_RDONLY), or the root directory or one
    // of `dirs` below it that exists ("etc", "var"; not followed if a
    // symlink) denies this user write access (faccessat, AT_EACCESS).
    std::optional<std::string> write_denied(std::initializer_list<const char*> dirs) const;

    // From now on, notes every path read, listed, stat'ed, resolved or whose
    // link is read (also through the HostDirs opened from now on) in `log`;
    // nullptr stops. Only reads are noted; capture packs what was noted.
    void record_reads(std::shared_ptr<ReadLog> log) { m_log = std::move(log); }

    // Local (this machine's) path for a host path, following symlinks inside
    // the root; components that do not exist yet are appended as they are.
    Result<std::filesystem::path> local(std::string_view host_path) const;
    // Host path after resolving every symlink inside the root.
    Result<std::string> resolve(std::string_view host_path) const;

    // The whole file. One larger than k_max_file_bytes is refused
    // (Errc::precondition), never cut short: apply keeps what it reads as the
    // file's pre-image, and rollback could not restore a tail it never read.
    Result<std::string> read_file(std::string_view host_path) const;
    static constexpr std::size_t k_max_file_bytes = std::size_t{256} << 20;
    // A record device read to its current end without ever waiting
    // (/dev/kmsg: one record per read(2)): opened O_RDONLY | O_NONBLOCK, read
    // until EAGAIN or end of file, at most max_bytes. Records the kernel
    // overwrote meanwhile (EPIPE) are skipped. Equivalent to: dmesg -r.
    Result<std::string> read_records(std::string_view host_path, std::size_t max_bytes) const;
    // Like read_file with trailing white space trimmed; nullopt on any failure.
    std::optional<std::string> read_attr(std::string_view host_path) const;
    // Target of the symlink at host_path itself (the last component is not followed).
    Result<std::string> read_link(std::string_view host_path) const;
    Result<std::vector<std::string>> list_dir(std::string_view host_path) const;
    // Opens a directory. known_path, when given, is the caller's lexical
    // knowledge of the resolved host path (a sysfs link target) and saves
    // resolving it again; the open itself is always confined to the root.
    Result<HostDir> open_dir(std::string_view host_path, std::optional<std::string> known_path = std::nullopt) const;

    // Opens a character device read-write (O_RDWR | O_CLOEXEC | O_NOCTTY),
    // resolved below the root like every access. Anything else at the path
    // (a regular file in a fixture tree) is never opened for writing: it
    // fails with ENOTTY. Only verify calls it, and only on the live host.
    HostDevice open_char_device(std::string_view host_path) const;

    bool exists(std::string_view host_path) const;
    bool is_dir(std::string_view host_path) const;
    // Information about host_path; the last component is not followed.
    FileInfo stat(std::string_view host_path) const;

    // Replaces (or creates) a regular file atomically: a temporary file in
    // the same directory, fsync, rename(2), fsync of the directory. An
    // existing file keeps its owner and mode; a new one gets new_mode (the
    // umask plays no part). With `exact`, the file gets exactly that owner,
    // group and mode instead, set with fchown/fchmod on the temporary file.
    // Refuses when the target is a symlink or not a regular file.
    // Equivalent to: install -m MODE tmp PATH.tmp && sync && mv PATH.tmp PATH
    Result<void> write_file_atomic(std::string_view host_path, std::string_view content, mode_t new_mode, FsSync sync,
                                   const std::optional<FileOwnership>& exact = std::nullopt) const;
    // Removes a regular file (or symlink) and fsyncs its directory.
    Result<void> remove_file(std::string_view host_path) const;
    // Renames host_path to the name `to` in the same directory (rename(2):
    // atomic, so of two processes renaming the same file exactly one
    // succeeds; the other gets Errc::not_found).
    Result<void> rename_in_dir(std::string_view host_path, std::string_view to) const;
    // Writes TEXT into an attribute file that exists (a sysfs switch, such as a PCI
    // function's `rom`): opened write-only, never created, no temporary file; the whole
    // text in one write(2), whose errno the error names. Not journaled: for switches the
    // caller turns back itself.
    Result<void> write_attr(std::string_view host_path, std::string_view text) const;
    // mkdir -p; each new directory gets mode 0755 whatever the umask (set
    // on the directory opened O_NOFOLLOW in its parent's descriptor).
    Result<void> create_directories(std::string_view host_path) const;
    // rmdir(2) of an empty directory (the last component is not followed),
    // then fsync of its parent. A missing directory is not an error.
    Result<void> remove_directory(std::string_view host_path) const;
    // fsync(2) of a directory, so entries created in it survive a crash.
    Result<void> sync_directory(std::string_view host_path) const;
    // Takes an exclusive flock(2) on host_path without waiting. Errc::conflict
    // when another process holds it. Equivalent to: flock -n PATH
    Result<HostLock> try_lock(std::string_view host_path, LockCreate create) const;
    // Unlinks a lock file its holder created (before it lets go: try_lock
    // then never keeps a lock on an unlinked file). Not a step of any
    // transaction, so no fault point. Equivalent to: rm -f PATH
    Result<void> remove_lock_file(std::string_view host_path) const;

private:
    HostFs(std::filesystem::path root, bool live, std::shared_ptr<const int> root_fd)
        : m_root(std::move(root)), m_live(live), m_root_fd(std::move(root_fd))
    {}
    // openat2(2) of a host path on the root's descriptor with RESOLVE_IN_ROOT
    // | RESOLVE_NO_MAGICLINKS; -1 with errno set on failure.
    int open_in_root(std::string_view host_path, int flags, mode_t mode = 0) const;
    // The directory holding host_path, opened like open_in_root (flags |
    // O_DIRECTORY); its last component, never followed, in `name`. Every
    // change is an *at() call on that descriptor and that name.
    int open_parent(std::string_view host_path, std::string& name, int flags) const;
    // Resolution that tolerates a missing tail (which is appended lexically);
    // for names only (resolve, local, HostDir::path), never for an access.
    Result<std::string> resolve_impl(std::string_view host_path, bool follow_last) const;
    std::string local_str(const std::string& resolved_host_path) const;

    std::filesystem::path m_root;
    bool m_live = false;
    std::shared_ptr<const int> m_root_fd; // O_PATH descriptor of the root
    std::shared_ptr<ReadLog> m_log;       // record_reads; null: not recording
    void note(std::string_view host_path, Access access, const std::string* content = nullptr) const
    {
        if (m_log) {
            m_log->note(host_path, access, content);
        }
    }
};

// Saves a file the operator named on this machine (not a host path: `plan
// --out FILE`). The temporary file has a unique random name, is created with
// O_CREAT|O_EXCL|O_NOFOLLOW in an open descriptor of FILE's directory, mode
// `mode`, and is renamed onto FILE in that same directory descriptor: a
// symlink planted at any name can neither redirect nor clobber the write.
// Only a regular file at FILE is replaced: a symlink, a device, a FIFO or a
// socket there is refused (Errc::precondition), checked before the
// temporary file is made and again just before the rename; a directory is
// a usage error. After the rename, the temporary files of FILE that a killed
// earlier save left (regular, this user's) are removed.
Result<void> save_local_file(const std::filesystem::path& path, std::string_view content, mode_t mode);

// Joins a host directory path and a relative or absolute link target the way
// the kernel would, without touching the filesystem ("/a/b" + "../c" = "/a/c").
std::string join_host_path(std::string_view dir, std::string_view target);
// Last component of a host path.
std::string_view base_name(std::string_view host_path);
// Directory part of a host path ("/" for "/x").
std::string dir_name(std::string_view host_path);

} // namespace passthru::util
