// SPDX-License-Identifier: GPL-2.0-or-later
// The boot-loader table: detection from files under the root (and the live probe), the
// command-line file and refresh of each entry, and verify's explanation of a miss.
#include <doctest/doctest.h>

#include <algorithm>

#include "../support/temp_dir.hpp"
#include "scan/boot_loader.hpp"

using namespace passthru;
using passthru::test::TempDir;

namespace {

scan::Bootloader detected(const scan::BootEvidence& e)
{
    return scan::detect_boot_loader(e).first->id;
}

util::HostFs open_root(const TempDir& dir)
{
    auto fs = util::HostFs::open(dir.path());
    REQUIRE(fs);
    return std::move(*fs);
}

} // namespace

TEST_SUITE("scan::boot_loader")
{
    TEST_CASE("every boot loader has one entry, and unknown is the catch-all at the end")
    {
        const auto& table = scan::boot_loaders();
        for (auto id :
             {scan::Bootloader::grub, scan::Bootloader::grub_proxmox_boot, scan::Bootloader::systemd_boot, scan::Bootloader::unknown}) {
            CHECK(std::count_if(table.begin(), table.end(), [&](const scan::BootLoaderSpec& s) { return s.id == id; }) == 1);
            CHECK(scan::boot_loader(id).id == id);
        }
        REQUIRE_FALSE(table.empty());
        CHECK(table.back().id == scan::Bootloader::unknown);
        CHECK(table.back().edit == scan::CmdlineEdit::none);
        CHECK(table.back().refresh.empty());
    }

    TEST_CASE("detection from files under the root")
    {
        scan::BootEvidence e;
        CHECK(detected(e) == scan::Bootloader::unknown);
        CHECK(scan::detect_boot_loader(e).second == "neither /etc/kernel/proxmox-boot-uuids nor /etc/default/grub found");

        e.grub_config = true;
        CHECK(detected(e) == scan::Bootloader::grub);

        // ESPs listed: proxmox-boot-tool owns the boot; UEFI + /etc/kernel/cmdline is systemd-boot.
        e.esps = true;
        e.uefi = true;
        e.kernel_cmdline = true;
        CHECK(detected(e) == scan::Bootloader::systemd_boot);
        e.kernel_cmdline = false;
        CHECK(detected(e) == scan::Bootloader::grub_proxmox_boot);
        CHECK(scan::detect_boot_loader(e).second.find("/etc/kernel/cmdline is missing") != std::string::npos);
        e.kernel_cmdline = true;
        e.uefi = false;
        CHECK(detected(e) == scan::Bootloader::grub_proxmox_boot);
        CHECK(scan::detect_boot_loader(e).second.find("legacy BIOS") != std::string::npos);
    }

    TEST_CASE("the live probe wins over the files")
    {
        scan::BootEvidence e;
        e.esps = true;
        e.uefi = true;
        e.kernel_cmdline = true;
        e.probe = scan::BootProbe::esp_grub;
        CHECK(detected(e) == scan::Bootloader::grub_proxmox_boot);
        e.probe = scan::BootProbe::no_esp;
        CHECK(detected(e) == scan::Bootloader::grub);
        e.probe = scan::BootProbe::not_installed;
        CHECK(detected(e) == scan::Bootloader::grub);
        e = {};
        e.probe = scan::BootProbe::esp_uefi;
        CHECK(detected(e) == scan::Bootloader::systemd_boot);
    }

    TEST_CASE("each entry names its file, its refresh and where the arguments go")
    {
        const auto& grub = scan::boot_loader(scan::Bootloader::grub);
        CHECK(grub.edit == scan::CmdlineEdit::grub_default);
        CHECK(grub.cmdline_file == "/etc/default/grub");
        CHECK(grub.refresh == std::vector<std::string>{"update-grub"});
        const auto& pbt_grub = scan::boot_loader(scan::Bootloader::grub_proxmox_boot);
        CHECK(pbt_grub.name == "grub");
        CHECK(pbt_grub.edit == scan::CmdlineEdit::grub_default);
        CHECK(pbt_grub.refresh == std::vector<std::string>{"proxmox-boot-tool", "refresh"});
        const auto& sd = scan::boot_loader(scan::Bootloader::systemd_boot);
        CHECK(sd.edit == scan::CmdlineEdit::first_line);
        CHECK(sd.cmdline_file == "/etc/kernel/cmdline");
        CHECK(scan::cmdline_howto(sd, "add iommu=pt")
              == "add iommu=pt in /etc/kernel/cmdline (one line, keep root=), then run 'proxmox-boot-tool refresh' and reboot");
        CHECK(scan::cmdline_howto(scan::boot_loader(scan::Bootloader::unknown), "add iommu=pt")
              == "add iommu=pt on the kernel command line of your boot loader and reboot");
    }

    TEST_CASE("verify's explanation: refresh not run vs not rebooted, from grub.cfg")
    {
        TempDir dir;
        const auto fs = open_root(dir);
        const auto& grub = scan::boot_loader(scan::Bootloader::grub);
        const std::vector<std::string> missing{"iommu=pt", "initcall_blacklist=sysfb_init"};

        // No grub.cfg under the root: passthru cannot tell.
        auto why = scan::explain_missing_args(grub, fs, missing);
        CHECK(why.cause == scan::MissCause::unknown);
        CHECK(why.fix.find("update-grub (GRUB) or proxmox-boot-tool refresh") != std::string::npos);

        dir.write("boot/grub/grub.cfg",
                  "menuentry 'Proxmox VE GNU/Linux' {\n\tlinux\t/boot/vmlinuz-6.8.12-4-pve root=/dev/mapper/pve-root ro quiet\n}\n");
        why = scan::explain_missing_args(grub, fs, missing);
        CHECK(why.cause == scan::MissCause::refresh_not_run);
        CHECK(why.fix.find("run 'update-grub'") != std::string::npos);

        // One argument of two is not enough.
        dir.write("boot/grub/grub.cfg", "\tlinux\t/boot/vmlinuz root=/dev/sda1 ro quiet iommu=pt\n");
        CHECK(scan::explain_missing_args(grub, fs, missing).cause == scan::MissCause::refresh_not_run);

        dir.write("boot/grub/grub.cfg", "\tlinux\t/boot/vmlinuz root=/dev/sda1 ro quiet iommu=pt initcall_blacklist=sysfb_init\n");
        why = scan::explain_missing_args(grub, fs, missing);
        CHECK(why.cause == scan::MissCause::not_rebooted);
        CHECK(why.fix.find("reboot") != std::string::npos);

        // systemd-boot entries live on ESPs that are not mounted: no claim either way.
        CHECK(scan::explain_missing_args(scan::boot_loader(scan::Bootloader::systemd_boot), fs, missing).cause == scan::MissCause::unknown);
    }
}

TEST_SUITE("scan::boot_loader")
{
    TEST_CASE("a trial boot is the marker as a word of its own on the command line")
    {
        using passthru::scan::is_trial_boot;
        CHECK(is_trial_boot("BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro quiet iommu=pt passthru.trial systemd.wants=x\n"));
        CHECK(is_trial_boot("passthru.trial"));
        CHECK_FALSE(is_trial_boot("BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro quiet"));
        CHECK_FALSE(is_trial_boot("passthru.trialx ro"));
        CHECK_FALSE(is_trial_boot("xpassthru.trial"));
        CHECK_FALSE(is_trial_boot(""));
    }
}
