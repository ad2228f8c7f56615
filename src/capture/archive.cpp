// SPDX-License-Identifier: GPL-2.0-or-later
#include "capture/archive.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <memory>

namespace passthru::capture {

namespace {

la_ssize_t append_to_string(archive* /*a*/, void* client, const void* buffer, size_t length)
{
    static_cast<std::string*>(client)->append(static_cast<const char*>(buffer), length);
    return static_cast<la_ssize_t>(length);
}

struct ArchiveFree
{
    void operator()(archive* a) const { archive_write_free(a); }
};

struct EntryFree
{
    void operator()(archive_entry* e) const { archive_entry_free(e); }
};

Error archive_error(archive* a, const std::string& what)
{
    const char* message = archive_error_string(a);
    return Error(Errc::io, "cannot write the archive: " + what + (message != nullptr ? std::string(": ") + message : std::string()));
}

Result<void> write_member(archive* a, const Member& m, std::time_t when)
{
    const std::unique_ptr<archive_entry, EntryFree> entry(archive_entry_new());
    archive_entry_set_pathname(entry.get(), m.path.substr(1).c_str());
    archive_entry_set_perm(entry.get(), m.mode & 07777);
    archive_entry_set_uid(entry.get(), 0);
    archive_entry_set_gid(entry.get(), 0);
    archive_entry_set_uname(entry.get(), "root");
    archive_entry_set_gname(entry.get(), "root");
    archive_entry_set_mtime(entry.get(), when, 0);
    switch (m.type) {
    case MemberType::directory:
        archive_entry_set_filetype(entry.get(), AE_IFDIR);
        break;
    case MemberType::symlink:
        archive_entry_set_filetype(entry.get(), AE_IFLNK);
        archive_entry_set_symlink(entry.get(), m.data.c_str());
        break;
    case MemberType::file:
        archive_entry_set_filetype(entry.get(), AE_IFREG);
        archive_entry_set_size(entry.get(), static_cast<la_int64_t>(m.data.size()));
        break;
    }
    if (archive_write_header(a, entry.get()) != ARCHIVE_OK) {
        return tl::unexpected(archive_error(a, m.path));
    }
    if (m.type == MemberType::file && !m.data.empty()
        && archive_write_data(a, m.data.data(), m.data.size()) != static_cast<la_ssize_t>(m.data.size())) {
        return tl::unexpected(archive_error(a, m.path));
    }
    return {};
}

} // namespace

Compression compression_for(std::string_view file_name)
{
    if (file_name.ends_with(".tar")) {
        return Compression::none;
    }
    if (file_name.ends_with(".tar.xz") || file_name.ends_with(".txz")) {
        return Compression::xz;
    }
    return Compression::gzip;
}

Result<std::string> write_archive(const std::vector<Member>& members, Compression compression, std::time_t when)
{
    std::string out;
    const std::unique_ptr<archive, ArchiveFree> a(archive_write_new());
    if (!a) {
        return fail(Errc::internal, "cannot write the archive: libarchive could not start");
    }
    int rc = archive_write_set_format_pax_restricted(a.get());
    if (rc == ARCHIVE_OK && compression == Compression::gzip) {
        rc = archive_write_add_filter_gzip(a.get());
    } else if (rc == ARCHIVE_OK && compression == Compression::xz) {
        rc = archive_write_add_filter_xz(a.get());
    }
    if (rc == ARCHIVE_OK) {
        rc = archive_write_set_bytes_in_last_block(a.get(), 1);
    }
    if (rc == ARCHIVE_OK) {
        rc = archive_write_open(a.get(), &out, nullptr, append_to_string, nullptr);
    }
    if (rc != ARCHIVE_OK) {
        return tl::unexpected(archive_error(a.get(), "setting it up"));
    }
    for (const auto& m : members) {
        if (auto written = write_member(a.get(), m, when); !written) {
            return tl::unexpected(written.error());
        }
    }
    if (archive_write_close(a.get()) != ARCHIVE_OK) {
        return tl::unexpected(archive_error(a.get(), "closing it"));
    }
    return out;
}

} // namespace passthru::capture
