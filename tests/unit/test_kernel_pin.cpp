// SPDX-License-Identifier: GPL-2.0-or-later
// kernel/pin and kernel/policy: what 'passthru kernel pin/unpin' plans on each boot loader
// (the files proxmox-boot-tool's pin writes, GRUB_DEFAULT of the kernel's entry), what it
// refuses, and the hook's policy file.
#include <doctest/doctest.h>

#include <algorithm>

#include "../support/plan_view.hpp"
#include "../support/shipped_data.hpp"
#include "../support/temp_dir.hpp"
#include "kernel/pin.hpp"
#include "kernel/policy.hpp"
#include "plan/paths.hpp"
#include "util/strings.hpp"

using namespace passthru;

namespace {

constexpr const char* k_pin_new = "6.8.12-9-pve";
constexpr const char* k_pin_root_id = "3c0f5b6e-a1b2-4c3d-8e9f-001122334455";

// A grub.cfg as update-grub's 10_linux writes it: the first entry, then the submenu.
std::string pin_grub_cfg(const std::vector<std::string>& kernels)
{
    std::string out = "menuentry 'Proxmox VE GNU/Linux' --class proxmox $menuentry_id_option 'gnulinux-simple-" + std::string(k_pin_root_id)
                      + "' {\n\tlinux /boot/vmlinuz-" + kernels.front() + " root=/dev/sda1 ro\n}\n";
    out += "submenu 'Advanced options for Proxmox VE GNU/Linux' $menuentry_id_option 'gnulinux-advanced-" + std::string(k_pin_root_id)
           + "' {\n";
    for (const auto& k : kernels) {
        out += "\tmenuentry 'Proxmox VE GNU/Linux, with Linux " + k + "' --class proxmox $menuentry_id_option 'gnulinux-" + k + "-advanced-"
               + k_pin_root_id + "' {\n\t\tlinux /boot/vmlinuz-" + k + " root=/dev/sda1 ro\n\t}\n";
    }
    return out + "}\n";
}

// A copy of a fixture host with `kernels` installed (modules tree and image).
struct PinHost
{
    test::TempDir dir;
    std::optional<test::ScannedFixture> scanned;

    PinHost(const std::string& fixture, const std::vector<std::string>& kernels)
    {
        test::copy_tree(std::filesystem::path(PASSTHRU_FIXTURES_DIR) / "hosts" / fixture, dir.path());
        for (const auto& k : kernels) {
            dir.write("boot/vmlinuz-" + k, "");
            dir.write("lib/modules/" + k + "/modules.dep", "");
        }
    }
    void scan()
    {
        scanned = test::scan_root(dir.path());
        REQUIRE(scanned);
    }
};

} // namespace

TEST_SUITE("kernel::pin")
{
    TEST_CASE("plain GRUB: GRUB_DEFAULT names the kernel's Advanced options entry, then update-grub")
    {
        PinHost h("epyc-4x2080ti", {"6.2.16-3-pve", k_pin_new});
        h.dir.write("boot/grub/grub.cfg", pin_grub_cfg({k_pin_new, "6.2.16-3-pve"}));
        h.scan();
        const data::DataDir data(h.scanned->fs, std::nullopt);
        auto p = kernel::plan_pin(h.scanned->fs, h.scanned->inventory, data, "6.2.16-3-pve");
        REQUIRE(p);
        REQUIRE(p->files.size() == 1);
        const auto* f = test::file_of(*p, plan::k_grub_pin_dropin);
        REQUIRE(f != nullptr);
        CHECK(f->action == plan::FileAction::create);
        CHECK(util::split_lines(*f->after).back()
              == "GRUB_DEFAULT=\"gnulinux-advanced-" + std::string(k_pin_root_id) + ">gnulinux-6.2.16-3-pve-advanced-" + k_pin_root_id
                     + "\"");
        CHECK(test::command_lines(*p) == std::vector<std::string>{"update-grub"});
        REQUIRE(p->request.kernel);
        CHECK(p->request.kernel->release == "6.2.16-3-pve");

        // Where proxmox-boot-tool is installed: its own two files, the bytes its pin writes.
        h.dir.write("usr/sbin/proxmox-boot-tool", "#!/bin/sh\n");
        p = kernel::plan_pin(h.scanned->fs, h.scanned->inventory, data, "6.2.16-3-pve");
        REQUIRE(p);
        REQUIRE(p->files.size() == 2);
        CHECK(*test::file_of(*p, plan::k_kernel_pin_file)->after == "6.2.16-3-pve\n");
        CHECK(*test::file_of(*p, plan::k_grub_pin_dropin_pbt)->after
              == "GRUB_DEFAULT=\"gnulinux-advanced-" + std::string(k_pin_root_id) + ">gnulinux-6.2.16-3-pve-advanced-" + k_pin_root_id
                     + "\"\n");
    }

    TEST_CASE("plain GRUB: a kernel without a menu entry, a missing grub.cfg, a kernel not installed are refused")
    {
        PinHost h("epyc-4x2080ti", {"6.2.16-3-pve", k_pin_new});
        h.scan();
        const data::DataDir data(h.scanned->fs, std::nullopt);
        auto p = kernel::plan_pin(h.scanned->fs, h.scanned->inventory, data, k_pin_new);
        REQUIRE_FALSE(p);
        CHECK(p.error().code() == Errc::precondition);
        CHECK(std::string(p.error().what()).find("/boot/grub/grub.cfg cannot be read") != std::string::npos);

        h.dir.write("boot/grub/grub.cfg", pin_grub_cfg({"6.2.16-3-pve"}));
        p = kernel::plan_pin(h.scanned->fs, h.scanned->inventory, data, k_pin_new);
        REQUIRE_FALSE(p);
        CHECK(p.error().code() == Errc::precondition);
        CHECK(std::string(p.error().what()).find("has no menu entry 'gnulinux-" + std::string(k_pin_new) + "-advanced-")
              != std::string::npos);

        for (const auto* word : {"9.9.9-1-pve", "../../etc", ""}) {
            p = kernel::plan_pin(h.scanned->fs, h.scanned->inventory, data, word);
            REQUIRE_FALSE(p);
            CHECK(p.error().code() == Errc::usage);
        }
        // modules but no image: not bootable, not installed
        h.dir.write("lib/modules/6.9.1-1-pve/modules.dep", "");
        p = kernel::plan_pin(h.scanned->fs, h.scanned->inventory, data, "6.9.1-1-pve");
        REQUIRE_FALSE(p);
        CHECK(std::string(p.error().what()).find("no /boot/vmlinuz-6.9.1-1-pve") != std::string::npos);
    }

    TEST_CASE("systemd-boot through proxmox-boot-tool: its pin file, then proxmox-boot-tool refresh; unpin removes it")
    {
        PinHost h("epyc-4x2080ti-zfs", {"6.8.12-4-pve", k_pin_new});
        h.scan();
        REQUIRE(h.scanned->inventory.host.bootloader == scan::Bootloader::systemd_boot);
        const data::DataDir data(h.scanned->fs, std::nullopt);
        auto p = kernel::plan_pin(h.scanned->fs, h.scanned->inventory, data, "6.8.12-4-pve");
        REQUIRE(p);
        REQUIRE(p->files.size() == 1);
        CHECK(*test::file_of(*p, plan::k_kernel_pin_file)->after == "6.8.12-4-pve\n");
        CHECK(test::command_lines(*p) == std::vector<std::string>{"proxmox-boot-tool refresh"});

        auto none = kernel::plan_unpin(h.scanned->fs, h.scanned->inventory, data);
        REQUIRE(none);
        CHECK(none->empty());

        h.dir.write("etc/kernel/proxmox-boot-pin", "6.8.12-4-pve\n");
        h.dir.write("etc/kernel/next-boot-pin", std::string(k_pin_new) + "\n");
        CHECK(kernel::pinned_kernel(h.scanned->fs) == "6.8.12-4-pve");
        p = kernel::plan_pin(h.scanned->fs, h.scanned->inventory, data, "6.8.12-4-pve");
        REQUIRE(p);
        CHECK(p->empty()); // pinned already
        p = kernel::plan_pin(h.scanned->fs, h.scanned->inventory, data, k_pin_new);
        REQUIRE(p);
        CHECK(test::file_of(*p, plan::k_kernel_pin_file)->action == plan::FileAction::modify);
        CHECK(std::any_of(p->notes.begin(), p->notes.end(),
                          [](const std::string& n) { return n.find("next-boot-pin exists") != std::string::npos; }));

        auto u = kernel::plan_unpin(h.scanned->fs, h.scanned->inventory, data);
        REQUIRE(u);
        REQUIRE(u->files.size() == 2);
        CHECK(test::file_of(*u, plan::k_kernel_pin_file)->action == plan::FileAction::remove);
        CHECK(test::file_of(*u, plan::k_next_boot_pin_file)->action == plan::FileAction::remove);
        CHECK(test::command_lines(*u) == std::vector<std::string>{"proxmox-boot-tool refresh"});
    }

    TEST_CASE("the pinned kernel is read back from passthru's GRUB drop-in")
    {
        PinHost h("epyc-4x2080ti", {});
        h.scan();
        CHECK_FALSE(kernel::pinned_kernel(h.scanned->fs));
        h.dir.write("etc/default/grub.d/passthru-kernel-pin.cfg",
                    "# x\nGRUB_DEFAULT=\"gnulinux-advanced-abc>gnulinux-6.2.16-3-pve-advanced-abc\"\n");
        CHECK(kernel::pinned_kernel(h.scanned->fs) == "6.2.16-3-pve");
    }
}

TEST_SUITE("kernel::policy")
{
    TEST_CASE("on-break is warn by default, pin when asked; anything else names the line")
    {
        auto p = kernel::parse_policy("");
        REQUIRE(p);
        CHECK(p->on_break == kernel::OnBreak::warn);
        p = kernel::parse_policy("# passthru's kernel hook\n\n  on-break =  pin   # pin the last good kernel\n");
        REQUIRE(p);
        CHECK(p->on_break == kernel::OnBreak::pin);
        p = kernel::parse_policy("on-break=warn\n");
        REQUIRE(p);
        CHECK(p->on_break == kernel::OnBreak::warn);
        for (const auto* bad : {"on-break = yes\n", "\non_break = pin\n", "pin\n"}) {
            p = kernel::parse_policy(bad);
            REQUIRE_FALSE(p);
            CHECK(p.error().code() == Errc::parse);
            CHECK(std::string(p.error().what()).starts_with("/etc/passthru/kernel.conf line "));
        }
        CHECK(std::string(kernel::parse_policy("\non_break = pin\n").error().what()).find("line 2: unknown key 'on_break'")
              != std::string::npos);
    }
}
