// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include "util/strings.hpp"

using namespace passthru::util;

TEST_SUITE("util::strings")
{
    TEST_CASE("one version parser for kernel releases and package versions")
    {
        CHECK(major_minor("6.8.12-4-pve") == std::pair<int, int>{6, 8});
        CHECK(major_minor("6.2.16-3-pve") == std::pair<int, int>{6, 2});
        CHECK(major_minor("6.12.41+deb13-amd64") == std::pair<int, int>{6, 12});
        CHECK(major_minor("7.0.14-1-pve") == std::pair<int, int>{7, 0});
        CHECK(major_minor("8.3.0") == std::pair<int, int>{8, 3});
        CHECK(major_minor("9.0") == std::pair<int, int>{9, 0});
        CHECK_FALSE(major_minor(""));
        CHECK_FALSE(major_minor("6"));
        CHECK_FALSE(major_minor("6."));
        CHECK_FALSE(major_minor("v6.8"));
        CHECK_FALSE(major_minor("9999999.1")); // more digits than any version has
    }

    TEST_CASE("module names fold '-' to '_' as kmod does")
    {
        CHECK(module_key("vfio-pci") == "vfio_pci");
        CHECK(module_key("snd_hda_intel") == "snd_hda_intel");
        CHECK(module_key("i2c-nvidia-gpu") == "i2c_nvidia_gpu");
    }
}
