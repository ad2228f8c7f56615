// SPDX-License-Identifier: GPL-2.0-or-later
#include "kernel/initramfs.hpp"

#include <algorithm>
#include <archive.h>
#include <archive_entry.h>
#include <charconv>
#include <memory>
#include <optional>

namespace passthru::kernel {

namespace {

constexpr std::size_t k_newc_header = 110;
constexpr std::size_t k_max_members = 1000000;
constexpr std::size_t k_max_name = 4096;
constexpr std::size_t k_max_kept = std::size_t{1} << 20;
constexpr std::string_view k_trailer = "TRAILER!!!";

std::string member_path(std::string_view name)
{
    while (name.starts_with("./")) {
        name.remove_prefix(2);
    }
    while (name.starts_with('/')) {
        name.remove_prefix(1);
    }
    return std::string(name);
}

std::size_t pad4(std::size_t n)
{
    return (n + 3U) & ~std::size_t{3};
}

std::optional<std::size_t> hex8(std::string_view image, std::size_t at)
{
    std::uint32_t value = 0;
    const char* first = image.data() + at;
    const auto [ptr, ec] = std::from_chars(first, first + 8, value, 16);
    if (ec != std::errc() || ptr != first + 8) {
        return std::nullopt;
    }
    return value;
}

bool is_newc(std::string_view image, std::size_t pos)
{
    const auto magic = image.substr(pos, 6);
    return magic == "070701" || magic == "070702";
}

struct Walk
{
    const std::vector<std::string>& want;
    InitramfsContents& out;
    std::size_t members = 0;

    bool wanted(const std::string& path) const { return std::find(want.begin(), want.end(), path) != want.end(); }
};

// One uncompressed cpio archive from `pos` to its trailer; returns the offset after it.
Result<std::size_t> walk_newc(std::string_view image, std::size_t pos, Walk& walk, const std::string& where)
{
    const auto cut = [&where](const std::string& what) { return fail(Errc::parse, where + ": " + what); };
    while (true) {
        if (image.size() - pos < k_newc_header || !is_newc(image, pos)) {
            return cut("cpio archive cut short or damaged at byte " + std::to_string(pos));
        }
        const auto mode = hex8(image, pos + 14);
        const auto filesize = hex8(image, pos + 54);
        const auto namesize = hex8(image, pos + 94);
        if (!mode || !filesize || !namesize || *namesize == 0 || *namesize > k_max_name) {
            return cut("a cpio header with a bad field at byte " + std::to_string(pos));
        }
        const std::size_t name_at = pos + k_newc_header;
        if (image.size() - name_at < *namesize) {
            return cut("cpio archive cut short at byte " + std::to_string(pos));
        }
        const std::string_view name = image.substr(name_at, *namesize - 1);
        const std::size_t data_at = pos + pad4(k_newc_header + *namesize);
        if (data_at > image.size() || image.size() - data_at < *filesize) {
            return cut("cpio archive cut short at byte " + std::to_string(pos));
        }
        if (name == k_trailer) {
            return data_at + pad4(*filesize);
        }
        if (++walk.members > k_max_members) {
            return cut("more than " + std::to_string(k_max_members) + " members");
        }
        const std::string path = member_path(name);
        const bool regular = (*mode & 0170000U) == 0100000U;
        if (regular && walk.wanted(path) && *filesize <= k_max_kept) {
            walk.out.files[path] = std::string(image.substr(data_at, *filesize));
        }
        if (!path.empty()) {
            walk.out.paths.insert(path);
        }
        pos = data_at + pad4(*filesize);
        if (pos > image.size()) {
            return cut("cpio archive cut short");
        }
    }
}

struct ArchiveFree
{
    void operator()(archive* a) const { archive_read_free(a); }
};

// The rest of the image: a compressed cpio archive, read through libarchive.
Result<void> walk_compressed(std::string_view image, Walk& walk, const std::string& where)
{
    const std::unique_ptr<archive, ArchiveFree> a(archive_read_new());
    if (!a) {
        return fail(Errc::internal, "libarchive: out of memory");
    }
    archive_read_support_filter_all(a.get());
    archive_read_support_format_cpio(a.get());
    const auto lib_error = [&](const std::string& what) {
        const char* text = archive_error_string(a.get());
        return fail(Errc::parse, where + ": " + what + (text != nullptr ? std::string(": ") + text : std::string()));
    };
    if (archive_read_open_memory(a.get(), image.data(), image.size()) != ARCHIVE_OK) {
        return lib_error("not a cpio archive passthru can read");
    }
    archive_entry* entry = nullptr;
    while (true) {
        const int rc = archive_read_next_header(a.get(), &entry);
        if (rc == ARCHIVE_EOF) {
            return {};
        }
        if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
            return lib_error("cannot read the compressed cpio archive");
        }
        if (++walk.members > k_max_members) {
            return fail(Errc::parse, where + ": more than " + std::to_string(k_max_members) + " members");
        }
        const char* raw = archive_entry_pathname(entry);
        const std::string path = member_path(raw != nullptr ? raw : "");
        const auto size = archive_entry_size(entry);
        if (archive_entry_filetype(entry) == AE_IFREG && walk.wanted(path) && size >= 0 && static_cast<std::size_t>(size) <= k_max_kept) {
            std::string content(static_cast<std::size_t>(size), '\0');
            const auto got = archive_read_data(a.get(), content.data(), content.size());
            if (got < 0 || static_cast<std::size_t>(got) != content.size()) {
                return lib_error("cannot read " + path);
            }
            walk.out.files[path] = std::move(content);
        } else if (archive_read_data_skip(a.get()) != ARCHIVE_OK) {
            return lib_error("cannot read past " + path);
        }
        if (!path.empty()) {
            walk.out.paths.insert(path);
        }
    }
}

} // namespace

Result<InitramfsContents> read_initramfs(std::string_view image, const std::vector<std::string>& want, const std::string& where)
{
    InitramfsContents out;
    Walk walk{want, out};
    std::size_t pos = 0;
    bool any = false;
    while (true) {
        while (pos < image.size() && image[pos] == '\0') { // padding between the archives
            ++pos;
        }
        if (pos == image.size()) {
            break;
        }
        if (!is_newc(image, pos)) {
            auto rest = walk_compressed(image.substr(pos), walk, where);
            if (!rest) {
                return tl::unexpected(rest.error());
            }
            any = true;
            break;
        }
        auto next = walk_newc(image, pos, walk, where);
        if (!next) {
            return tl::unexpected(next.error());
        }
        pos = *next;
        any = true;
    }
    if (!any) {
        return fail(Errc::parse, where + ": empty, not an initramfs");
    }
    return out;
}

} // namespace passthru::kernel
