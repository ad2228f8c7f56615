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

    TEST_CASE("whole package versions compare by their numbers; garbage and huge numbers are unknown")
    {
        CHECK(version_numbers("6.1-13") == std::vector<unsigned long>{6, 1, 13});
        CHECK(version_numbers("8.1.4pve1") == std::vector<unsigned long>{8, 1, 4});
        CHECK(version_numbers("9.0.25~bpo1") == std::vector<unsigned long>{9, 0, 25});
        CHECK(version_numbers("x!y").empty());
        CHECK(version_numbers("99999999999.1").empty());
        CHECK(version_at_least("9.0.25", "9.0.25"));
        CHECK(version_at_least("9.1.7", "9.0.25"));
        CHECK_FALSE(version_at_least("9.0.24", "9.0.25"));
        CHECK_FALSE(version_at_least("1.99999999999", "1.0"));
    }

    TEST_CASE("module names fold '-' to '_' as kmod does")
    {
        CHECK(module_key("vfio-pci") == "vfio_pci");
        CHECK(module_key("snd_hda_intel") == "snd_hda_intel");
        CHECK(module_key("i2c-nvidia-gpu") == "i2c_nvidia_gpu");
    }
}
