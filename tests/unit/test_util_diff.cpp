// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>

#include "../support/temp_dir.hpp"
#include "util/diff.hpp"
#include "util/sha256.hpp"

using namespace passthru::util;

namespace {

// Applies the diff with patch(1) and returns the result, so the format is
// checked by the real consumer of unified diffs.
std::string patched(const std::string& before, const std::string& diff)
{
    passthru::test::TempDir dir;
    dir.write("file", before);
    dir.write("file.diff", diff);
    const std::string cmd =
        "patch -s -f " + (dir.path() / "file").string() + " < " + (dir.path() / "file.diff").string() + " >/dev/null 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    return dir.read("file");
}

} // namespace

TEST_SUITE("util::diff")
{
    TEST_CASE("equal contents give no diff")
    {
        CHECK(unified_diff(std::string("a\n"), std::string("a\n"), "/x").empty());
    }

    TEST_CASE("diffs are labelled with host paths and apply with patch")
    {
        const std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
        const std::string after = "1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\neleven\n";
        const auto d = unified_diff(before, after, "/etc/default/grub");
        CHECK(d.find("--- /etc/default/grub\n+++ /etc/default/grub (planned)\n") == 0);
        CHECK(patched(before, d) == after);
    }

    TEST_CASE("created, emptied and newline-less files")
    {
        const auto created = unified_diff(std::nullopt, std::string("vfio\nvfio_pci\n"), "/etc/modules-load.d/vfio.conf");
        CHECK(created.find("--- /dev/null\n") == 0);
        CHECK(created.find("@@ -0,0 +1,2 @@") != std::string::npos);
        CHECK(patched("", created) == "vfio\nvfio_pci\n");
        const std::string one_line = "root=/dev/x quiet";
        const auto d = unified_diff(one_line, std::string("root=/dev/x quiet iommu=pt\n"), "/etc/kernel/cmdline");
        CHECK(d.find("\\ No newline at end of file") != std::string::npos);
        CHECK(patched(one_line, d) == "root=/dev/x quiet iommu=pt\n");
        const std::string start = "a\nb\nc\n";
        CHECK(patched(start, unified_diff(start, std::string("new\na\nb\nc\n"), "/f")) == "new\na\nb\nc\n");
        CHECK(patched(start, unified_diff(start, std::string("a\nc\n"), "/f")) == "a\nc\n");
    }

    TEST_CASE("sha256 of known input")
    {
        CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
