// SPDX-License-Identifier: GPL-2.0-or-later
// profiles/host/kernel.json: the shipped file loads, and each way of breaking the
// schema is one error naming the file and the field.
#include <doctest/doctest.h>

#include "../support/shipped_data.hpp"
#include "../support/temp_dir.hpp"
#include "../support/usage_error.hpp"
#include "data/kernel_cutoffs.hpp"

using namespace passthru;

namespace {

std::string cutoffs_error_of(std::string_view text)
{
    return test::usage_error(data::parse_kernel_cutoffs(text, "k.json"));
}

constexpr std::string_view k_good = R"({"schema": "passthru.kernel-cutoffs/1", "comment": "c",
  "vfio_virqfd_in_vfio": "6.2", "intel_iommu_default_on": "6.8", "sysfb_simple_framebuffer": "5.15"})";

} // namespace

TEST_SUITE("scan::kernel_cutoffs")
{
    TEST_CASE("the shipped file holds the releases of docs/facts.md")
    {
        test::TempDir root;
        auto fs = util::HostFs::open(root.path());
        REQUIRE(fs);
        const auto c = test::shipped_scan_data(*fs).cutoffs;
        CHECK(c.vfio_virqfd_in_vfio == data::KernelVersion{6, 2});
        CHECK(c.intel_iommu_default_on == data::KernelVersion{6, 8});
        CHECK(c.sysfb_simple_framebuffer == data::KernelVersion{5, 15});
        CHECK(data::KernelCutoffs::text(c.sysfb_simple_framebuffer) == "5.15");
    }

    TEST_CASE("an override under the root replaces the shipped file")
    {
        test::TempDir root;
        root.write(
            "etc/passthru/profiles/host/kernel.json",
            R"({"schema": "passthru.kernel-cutoffs/1", "vfio_virqfd_in_vfio": "6.2", "intel_iommu_default_on": "7.1", "sysfb_simple_framebuffer": "5.15"})");
        auto fs = util::HostFs::open(root.path());
        REQUIRE(fs);
        CHECK(test::shipped_scan_data(*fs).cutoffs.intel_iommu_default_on == data::KernelVersion{7, 1});
    }

    TEST_CASE("comparisons: unknown kernels are never 'at least'")
    {
        CHECK(data::KernelCutoffs::at_least(data::KernelVersion{6, 8}, {6, 8}));
        CHECK(data::KernelCutoffs::at_least(data::KernelVersion{7, 0}, {6, 8}));
        CHECK_FALSE(data::KernelCutoffs::at_least(data::KernelVersion{6, 5}, {6, 8}));
        CHECK_FALSE(data::KernelCutoffs::at_least(std::nullopt, {6, 8}));
    }

    TEST_CASE("every break of the schema names the file and the field")
    {
        CHECK(data::parse_kernel_cutoffs(k_good, "k.json"));
        CHECK(cutoffs_error_of("{") == "k.json: not a JSON document");
        CHECK(cutoffs_error_of(R"({"schema": "passthru.kernel-cutoffs/2"})").find("k.json: schema must be") == 0);
        CHECK(cutoffs_error_of(R"({"schema": "passthru.kernel-cutoffs/1", "vfio_virqfd_in_vfio": "6.2", "intel_iommu_default_on": "6.8"})")
              == "k.json: sysfb_simple_framebuffer must be a kernel release \"MAJOR.MINOR\" (e.g. \"6.2\")");
        for (const char* bad : {"\"6\"", "\"6.\"", "\".2\"", "\"6.2.1\"", "\"v6.2\"", "6.2", "\"6.2-pve\""}) {
            const std::string text = R"({"schema": "passthru.kernel-cutoffs/1", "vfio_virqfd_in_vfio": )" + std::string(bad)
                                     + R"(, "intel_iommu_default_on": "6.8", "sysfb_simple_framebuffer": "5.15"})";
            CAPTURE(bad);
            CHECK(cutoffs_error_of(text).find("k.json: vfio_virqfd_in_vfio must be a kernel release") == 0);
        }
        std::string extra(k_good);
        extra.insert(extra.size() - 1, R"(, "amd_iommu_default_on": "6.1")");
        CHECK(cutoffs_error_of(extra) == "k.json: amd_iommu_default_on is not a field of passthru.kernel-cutoffs/1");
    }
}
