// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include "format/pve_storage.hpp"

using passthru::format::pve::first_images_storage;

TEST_SUITE("format::pve_storage")
{
    TEST_CASE("the first section whose content list has images")
    {
        CHECK(first_images_storage("dir: local\n"
                                   "\tpath /var/lib/vz\n"
                                   "\tcontent iso,vztmpl,backup\n"
                                   "\n"
                                   "lvmthin: local-lvm\n"
                                   "\tthinpool data\n"
                                   "\tvgname pve\n"
                                   "\tcontent rootdir,images\n")
              == "local-lvm");
        CHECK(first_images_storage("zfspool: local-zfs\n\tpool rpool/data\n\tcontent images,rootdir\n\tsparse 1\n") == "local-zfs");
    }

    TEST_CASE("no storage for images, or text that is not a section")
    {
        CHECK_FALSE(first_images_storage(""));
        CHECK_FALSE(first_images_storage("dir: local\n\tcontent iso,backup\n"));
        // a content line outside any section, or after the blank line that ends one
        CHECK_FALSE(first_images_storage("\tcontent images\n"));
        CHECK_FALSE(first_images_storage("dir: local\n\n\tcontent images\n"));
        // "images" must be a whole item of the list, and the header needs an id
        CHECK_FALSE(first_images_storage("dir: local\n\tcontent images2\n"));
        CHECK_FALSE(first_images_storage("dir:\n\tcontent images\n"));
        CHECK_FALSE(first_images_storage("Dir: local\n\tcontent images\n"));
        CHECK_FALSE(first_images_storage("dir: local\ncontent images\n"));
    }
}
