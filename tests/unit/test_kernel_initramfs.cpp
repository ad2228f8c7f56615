// SPDX-License-Identifier: GPL-2.0-or-later
// kernel/initramfs: an image as initramfs-tools writes it (uncompressed early cpio, then a
// compressed one) is read member by member; a cut or foreign image is one parse error.
#include <doctest/doctest.h>

#include <archive.h>
#include <archive_entry.h>
#include <cstdio>

#include "kernel/initramfs.hpp"

using namespace passthru;

namespace {

// A cpio "newc" archive of the files (path, content), compressed with `filter` (libarchive's
// own writer, a different implementation from the reader's walk of uncompressed archives).
std::string initramfs_cpio(const std::vector<std::pair<std::string, std::string>>& files, int filter)
{
    archive* a = archive_write_new();
    archive_write_set_format_cpio_newc(a);
    if (filter != ARCHIVE_FILTER_NONE) {
        archive_write_add_filter(a, filter);
    }
    archive_write_set_bytes_in_last_block(a, 1);
    std::string out(std::size_t{1} << 20, '\0');
    std::size_t used = 0;
    REQUIRE(archive_write_open_memory(a, out.data(), out.size(), &used) == ARCHIVE_OK);
    for (const auto& [path, content] : files) {
        archive_entry* e = archive_entry_new();
        archive_entry_set_pathname(e, path.c_str());
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, static_cast<la_int64_t>(content.size()));
        REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
        archive_write_data(a, content.data(), content.size());
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
    out.resize(used);
    return out;
}

} // namespace

TEST_SUITE("kernel::initramfs")
{
    TEST_CASE("early microcode and a compressed main archive are both read")
    {
        for (const int filter : {ARCHIVE_FILTER_GZIP, ARCHIVE_FILTER_XZ, ARCHIVE_FILTER_ZSTD, ARCHIVE_FILTER_NONE}) {
            CAPTURE(filter);
            std::string image = initramfs_cpio({{"kernel/x86/microcode/AuthenticAMD.bin", "ucode"}}, ARCHIVE_FILTER_NONE);
            image += std::string(512 - image.size() % 512, '\0');
            image += initramfs_cpio({{"./etc/modprobe.d/passthru-vfio.conf", "softdep nouveau pre: vfio-pci\n"},
                                     {"usr/lib/modules/6.8.12-4-pve/kernel/drivers/vfio/pci/vfio-pci.ko", "ko"}},
                                    filter);
            const auto r = kernel::read_initramfs(image, {"etc/modprobe.d/passthru-vfio.conf"}, "img");
            REQUIRE_MESSAGE(r, (r ? "" : r.error().what()));
            CHECK(r->paths.count("kernel/x86/microcode/AuthenticAMD.bin") == 1);
            CHECK(r->paths.count("usr/lib/modules/6.8.12-4-pve/kernel/drivers/vfio/pci/vfio-pci.ko") == 1);
            REQUIRE(r->files.count("etc/modprobe.d/passthru-vfio.conf") == 1);
            CHECK(r->files.at("etc/modprobe.d/passthru-vfio.conf") == "softdep nouveau pre: vfio-pci\n");
            CHECK(r->files.size() == 1); // only what was asked for is kept
        }
    }

    TEST_CASE("a cut, empty or foreign image is one parse error naming it")
    {
        const std::string whole = initramfs_cpio({{"etc/a", std::string(300, 'x')}}, ARCHIVE_FILTER_NONE);
        for (const std::string& bad : {whole.substr(0, 200), std::string(), std::string(64, '\0'), std::string("ELF\x7f not an archive")}) {
            const auto r = kernel::read_initramfs(bad, {}, "/boot/initrd.img-x");
            REQUIRE_FALSE(r);
            CHECK(r.error().code() == Errc::parse);
            CHECK(std::string(r.error().what()).starts_with("/boot/initrd.img-x: "));
        }
        const std::string gz = initramfs_cpio({{"etc/a", std::string(3000, 'x')}}, ARCHIVE_FILTER_GZIP);
        const auto cut = kernel::read_initramfs(gz.substr(0, gz.size() / 2), {"etc/a"}, "img");
        CHECK_FALSE(cut);
    }
}
