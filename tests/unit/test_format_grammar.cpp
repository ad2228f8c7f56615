// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include "format/grammar.hpp"

using namespace passthru::format;

TEST_SUITE("format::grammar")
{
    TEST_CASE("module names: letters, digits, '_' and '-' only")
    {
        CHECK(matches(Grammar::module_name, "vfio_pci"));
        CHECK(matches(Grammar::module_name, "snd-hda-intel"));
        CHECK(matches(Grammar::module_name, "nvidia_drm"));
        CHECK_FALSE(matches(Grammar::module_name, ""));
        CHECK_FALSE(matches(Grammar::module_name, "nouveau\ninstall vfio_pci touch pwned"));
        CHECK_FALSE(matches(Grammar::module_name, "nouveau pre:"));
        CHECK_FALSE(matches(Grammar::module_name, "../x"));
        CHECK_FALSE(matches(Grammar::module_name, std::string(56, 'a')));
    }

    TEST_CASE("PCI ids and addresses")
    {
        CHECK(matches(Grammar::pci_id, "10de:1e07"));
        CHECK_FALSE(matches(Grammar::pci_id, "10DE:1E07"));
        CHECK_FALSE(matches(Grammar::pci_id, "10de:1e07,"));
        CHECK_FALSE(matches(Grammar::pci_id, "10de1e07"));
        CHECK(matches(Grammar::pci_address, "0000:41:00.0"));
        CHECK(matches(Grammar::pci_address, "0000:c1:1f.7"));
        CHECK_FALSE(matches(Grammar::pci_address, "0000:41:00.8"));
        CHECK_FALSE(matches(Grammar::pci_address, "0000:41:20.0"));
        CHECK_FALSE(matches(Grammar::pci_address, "41:00.0"));
        CHECK_FALSE(matches(Grammar::pci_address, "0000:41:00.0\n"));
    }

    TEST_CASE("NIC names follow the kernel's dev_valid_name()")
    {
        CHECK(matches(Grammar::nic_name, "enp65s0f0"));
        CHECK(matches(Grammar::nic_name, "vmbr0"));
        CHECK(matches(Grammar::nic_name, "bond0.100"));
        CHECK(matches(Grammar::nic_name, std::string(15, 'e')));
        CHECK_FALSE(matches(Grammar::nic_name, std::string(16, 'e')));
        CHECK_FALSE(matches(Grammar::nic_name, "."));
        CHECK_FALSE(matches(Grammar::nic_name, ".."));
        CHECK_FALSE(matches(Grammar::nic_name, "eth0:1"));
        CHECK_FALSE(matches(Grammar::nic_name, "a/b"));
        CHECK_FALSE(matches(Grammar::nic_name, "eth0\nauto x"));
        CHECK_FALSE(matches(Grammar::nic_name, ""));
    }

    TEST_CASE("kernel releases and kernel arguments (the systemd-boot trial entry)")
    {
        CHECK(matches(Grammar::kernel_release, "6.8.12-4-pve"));
        CHECK(matches(Grammar::kernel_release, "6.1.0-27-amd64"));
        CHECK(matches(Grammar::kernel_release, "6.17.2-1-pve"));
        CHECK_FALSE(matches(Grammar::kernel_release, ""));
        CHECK_FALSE(matches(Grammar::kernel_release, "../../x"));
        CHECK_FALSE(matches(Grammar::kernel_release, "6.8/../x"));
        CHECK_FALSE(matches(Grammar::kernel_release, "6.8.12 pve"));
        CHECK_FALSE(matches(Grammar::kernel_release, "6.8.12\ninitrd /x"));
        CHECK_FALSE(matches(Grammar::kernel_release, std::string(65, '6')));
        CHECK(matches(Grammar::kernel_arg, "root=ZFS=rpool/ROOT/pve-1"));
        CHECK(matches(Grammar::kernel_arg, "vfio_pci.ids=10de:1e07,10de:10f7"));
        CHECK(matches(Grammar::kernel_arg, "foo=\"a\""));
        CHECK_FALSE(matches(Grammar::kernel_arg, ""));
        CHECK_FALSE(matches(Grammar::kernel_arg, "a b"));
        CHECK_FALSE(matches(Grammar::kernel_arg, "quiet\nlinux /evil"));
        CHECK_FALSE(matches(Grammar::kernel_arg, "a\tb"));
        CHECK_FALSE(matches(Grammar::kernel_arg, "caf\xc3\xa9"));
        CHECK_FALSE(matches(Grammar::kernel_arg, std::string(1025, 'a')));
    }

    TEST_CASE("one line of text: no line break or other control character")
    {
        CHECK(matches(Grammar::line_text, ""));
        CHECK(matches(Grammar::line_text, "NVIDIA GeForce RTX 2080 Ti (TU102, 11 GiB)"));
        CHECK(matches(Grammar::line_text, "caf\xc3\xa9 \"quoted\" a=b;c"));
        CHECK_FALSE(matches(Grammar::line_text, "RTX\ninstall vfio-pci /bin/sh"));
        CHECK_FALSE(matches(Grammar::line_text, "host\r"));
        CHECK_FALSE(matches(Grammar::line_text, std::string("a\0b", 3)));
        CHECK_FALSE(matches(Grammar::line_text, "a\tb"));
        CHECK_FALSE(matches(Grammar::line_text, "\x1b[31mred"));
        CHECK_FALSE(matches(Grammar::line_text, "del\x7f"));
    }

    TEST_CASE("VM ids and storage ids")
    {
        CHECK(matches(Grammar::vm_id, "100"));
        CHECK(matches(Grammar::vm_id, "999999999"));
        CHECK_FALSE(matches(Grammar::vm_id, "99"));
        CHECK_FALSE(matches(Grammar::vm_id, "0101"));
        CHECK_FALSE(matches(Grammar::vm_id, "1000000000"));
        CHECK_FALSE(matches(Grammar::vm_id, "-1"));
        CHECK(matches(Grammar::storage_id, "local-lvm"));
        CHECK(matches(Grammar::storage_id, "ceph.pool_1"));
        CHECK_FALSE(matches(Grammar::storage_id, "1local"));
        CHECK_FALSE(matches(Grammar::storage_id, "local-"));
        CHECK_FALSE(matches(Grammar::storage_id, "lo cal"));
    }

    TEST_CASE("the refusal line names the value with control characters escaped")
    {
        CHECK_FALSE(invalid_value(Grammar::module_name, "vfio_pci", "the module"));
        const auto bad = invalid_value(Grammar::module_name, "a\nb\x1b", "the module");
        REQUIRE(bad);
        CHECK(*bad == "the module 'a\\nb\\e' is not a module name: letters, digits, '_' and '-', at most 55 characters");
    }
}
