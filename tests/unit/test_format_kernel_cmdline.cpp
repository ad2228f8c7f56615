// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include "format/kernel_cmdline.hpp"

using namespace passthru::format;

TEST_SUITE("format::kernel_cmdline")
{
    TEST_CASE("kernel command line tokens")
    {
        KernelCmdline c("BOOT_IMAGE=/boot/vmlinuz root=/dev/mapper/pve-root ro quiet amd_iommu=on vfio-pci.ids=10de:1e07 foo=\"a b\"");
        CHECK(c.tokens().size() == 7);
        CHECK(c.has_key("vfio_pci.ids"));
        CHECK(c.value("foo").value() == "\"a b\"");
        c.remove_key("amd_iommu");
        c.set("iommu=pt");
        c.set("vfio-pci.ids=10de:1e07,10de:10f7");
        CHECK(c.str()
              == "BOOT_IMAGE=/boot/vmlinuz root=/dev/mapper/pve-root ro quiet vfio-pci.ids=10de:1e07,10de:10f7 foo=\"a b\" iommu=pt");
    }
}
