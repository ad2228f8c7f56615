// SPDX-License-Identifier: GPL-2.0-or-later
// The trial boot (plan/trial.cpp) on fixture trees: what a trial plan writes
// instead of the default entry's command line, what binds only on the trial
// boot, what it refuses, and the plan confirm makes from the same request.
#include <doctest/doctest.h>

#include <algorithm>

#include "../support/plan_view.hpp"
#include "../support/shipped_data.hpp"
#include "plan/planner.hpp"
#include "plan/trial.hpp"
#include "util/strings.hpp"

using namespace passthru;

namespace {

test::ScannedFixture trial_fixture(const std::string& name)
{
    auto f = test::scan_fixture(name);
    REQUIRE(f);
    return std::move(*f);
}

plan::Request trial_request(const std::string& gpus, std::optional<int> minutes = 10)
{
    plan::Request r;
    r.vm = "101";
    r.vmid = 101;
    r.gpus = gpus;
    r.trial_minutes = minutes;
    return r;
}

bool contains(const std::optional<std::string>& text, std::string_view what)
{
    return text && text->find(what) != std::string::npos;
}

} // namespace

TEST_SUITE("plan/trial")
{
    TEST_CASE("by id: the binding goes on the trial entry, the default entry's files stay, grub-reboot selects it once")
    {
        auto f = trial_fixture("epyc-4x2080ti");
        const data::DataDir data(f.fs, std::nullopt);
        const auto p = plan::make_plan(f.inventory, f.fs, data, trial_request("all", 7));
        REQUIRE(p);
        REQUIRE_FALSE(p->refused());
        CHECK(test::file_of(*p, "/etc/default/grub.d/passthru.cfg") == nullptr);
        CHECK(test::file_of(*p, "/etc/default/grub") == nullptr);
        const auto* script = test::file_of(*p, plan::k_trial_grub_script);
        REQUIRE(script != nullptr);
        CHECK(script->mode == 0755);
        CHECK(contains(script->after, "passthru.trial systemd.wants=passthru-trial.timer"));
        CHECK(contains(script->after, "vfio_pci.ids=10de:10f7,10de:1ad6,10de:1ad7,10de:1e07"));
        CHECK(contains(script->after, "modprobe.blacklist=nouveau,nvidia"));
        CHECK(contains(script->after, "'amd_iommu=on') ;;")); // removed from the trial entry only
        CHECK(contains(script->after, "vmlinuz-6.2.16-3-pve"));
        const auto* conf = test::file_of(*p, "/etc/modprobe.d/passthru-vfio.conf");
        REQUIRE(conf != nullptr);
        CHECK_FALSE(contains(conf->after, "\noptions vfio-pci ids="));
        CHECK_FALSE(contains(conf->after, "\nblacklist "));
        CHECK(contains(conf->after, "\nsoftdep nouveau pre: vfio-pci"));
        const auto* timer = test::file_of(*p, plan::k_trial_timer);
        REQUIRE(timer != nullptr);
        CHECK(contains(timer->after, "OnBootSec=7min"));
        CHECK(contains(timer->after, "ConditionKernelCommandLine=passthru.trial"));
        const auto* service = test::file_of(*p, plan::k_trial_service);
        REQUIRE(service != nullptr);
        CHECK(contains(service->after, "ConditionPathExists=/etc/grub.d/42_passthru_trial"));
        const auto cmds = test::command_lines(*p);
        REQUIRE(cmds.size() >= 2);
        CHECK(cmds[cmds.size() - 2] == "update-grub");
        CHECK(cmds.back() == "grub-reboot passthru-trial");
        // verify on the trial boot looks for the planned arguments and the binding.
        CHECK(std::count(p->kernel_args.add.begin(), p->kernel_args.add.end(), "vfio_pci.ids=10de:10f7,10de:1ad6,10de:1ad7,10de:1e07")
              == 1);
    }

    TEST_CASE("the fallback: a revert unit that every boot starts and that acts only without the marker")
    {
        auto f = trial_fixture("epyc-4x2080ti");
        const data::DataDir data(f.fs, std::nullopt);
        const auto p = plan::make_plan(f.inventory, f.fs, data, trial_request("all"));
        REQUIRE(p);
        REQUIRE_FALSE(p->refused());
        const auto* revert = test::file_of(*p, plan::k_trial_revert);
        REQUIRE(revert != nullptr);
        CHECK(revert->mode == 0644);
        CHECK(contains(revert->after, "\nConditionKernelCommandLine=!passthru.trial\n"));
        CHECK(contains(revert->after, "\nType=oneshot\n"));
        CHECK(contains(revert->after, "\nExecStart=passthru rollback --trial-fallback\n"));
        const auto* dropin = test::file_of(*p, plan::k_trial_dropin);
        REQUIRE(dropin != nullptr);
        CHECK(contains(dropin->after, "\n[Unit]\nWants=passthru-trial-revert.service\nAfter=passthru-trial-revert.service\n"));
        const auto files = plan::trial_files();
        CHECK(std::find(files.begin(), files.end(), plan::k_trial_revert) != files.end());
        CHECK(std::find(files.begin(), files.end(), plan::k_trial_dropin) != files.end());
    }

    TEST_CASE("by address: the install hook binds only with the marker on /proc/cmdline")
    {
        auto f = trial_fixture("qemu-intel");
        const data::DataDir data(f.fs, std::nullopt);
        const auto p = plan::make_plan(f.inventory, f.fs, data, trial_request("0000:04:00"));
        REQUIRE(p);
        REQUIRE_FALSE(p->refused());
        CHECK(p->binding == "address");
        const auto* conf = test::file_of(*p, "/etc/modprobe.d/passthru-vfio.conf");
        REQUIRE(conf != nullptr);
        const std::string guard = "install vfio-pci \\\n  case \" $(cat /proc/cmdline) \" in *\" passthru.trial \"*) ;; *) exec "
                                  "/sbin/modprobe --ignore-install vfio-pci $CMDLINE_OPTS ;; esac; \\\n";
        CHECK(contains(conf->after, guard));
        CHECK(p->trial_args.empty()); // nothing to bind by id, no NVIDIA driver to blacklist
    }

    TEST_CASE("systemd-boot: an own loader entry staged under /etc, /etc/kernel/cmdline untouched, the helper selects it once")
    {
        auto zfs = trial_fixture("epyc-4x2080ti-zfs");
        const data::DataDir data(zfs.fs, std::nullopt);
        const auto p = plan::make_plan(zfs.inventory, zfs.fs, data, trial_request("all", 7));
        REQUIRE(p);
        REQUIRE_FALSE(p->refused());
        CHECK(test::file_of(*p, "/etc/kernel/cmdline") == nullptr);
        CHECK(test::file_of(*p, plan::k_trial_grub_script) == nullptr);
        const auto* entry = test::file_of(*p, plan::k_trial_loader_entry);
        REQUIRE(entry != nullptr);
        CHECK(entry->mode == 0644);
        CHECK(contains(entry->after, "\ntitle passthru trial\nversion 6.8.12-4-pve\noptions root=ZFS=rpool/ROOT/pve-1 boot=zfs "));
        CHECK(contains(entry->after, "\nlinux /EFI/proxmox/6.8.12-4-pve/vmlinuz-6.8.12-4-pve\n"
                                     "initrd /EFI/proxmox/6.8.12-4-pve/initrd.img-6.8.12-4-pve\n"));
        // The options line: the default entries' line, the planned arguments, the binding, the marker, the watchdog.
        const auto lines = util::split_lines(*entry->after);
        const auto options = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.starts_with("options "); });
        REQUIRE(options != lines.end());
        CHECK(options->find(" iommu=pt ") != std::string::npos);
        CHECK(options->find(" vfio_pci.ids=10de:10f7,10de:1ad6,10de:1ad7,10de:1e07 ") != std::string::npos);
        CHECK(options->find(" modprobe.blacklist=nouveau,nvidia ") != std::string::npos);
        CHECK(options->ends_with(" passthru.trial systemd.wants=passthru-trial.timer"));
        CHECK(std::count(lines.begin(), lines.end(), std::string("title passthru trial")) == 1);
        const auto* service = test::file_of(*p, plan::k_trial_service);
        REQUIRE(service != nullptr);
        CHECK(contains(service->after, "\nConditionPathExists=/etc/passthru/trial-loader-entry.conf\n"));
        CHECK_FALSE(contains(service->after, "grub-editenv"));
        CHECK(test::file_of(*p, plan::k_trial_revert) != nullptr);
        CHECK(test::file_of(*p, plan::k_trial_dropin) != nullptr);
        const auto cmds = test::command_lines(*p);
        REQUIRE(cmds.size() >= 3);
        CHECK(cmds[cmds.size() - 3].starts_with("update-initramfs "));
        CHECK(cmds[cmds.size() - 2] == "proxmox-boot-tool refresh");
        CHECK(cmds.back() == plan::trial_loader_helper() + " install /etc/passthru/trial-loader-entry.conf");
        CHECK(plan::trial_loader_helper().ends_with("/lib/passthru/trial-loader-entry"));
        for (const auto& c : cmds) {
            CHECK(c.find("grub") == std::string::npos);
        }
        CHECK(plan::trial_reboot_step(*p).starts_with("systemd-boot boots the trial entry 'passthru-trial.conf' once"));
        const auto files = plan::trial_files();
        CHECK(std::find(files.begin(), files.end(), plan::k_trial_loader_entry) != files.end());
    }

    TEST_CASE("GRUB: the watchdog names the GRUB script and clears next_entry")
    {
        auto f = trial_fixture("epyc-4x2080ti");
        const data::DataDir data(f.fs, std::nullopt);
        const auto p = plan::make_plan(f.inventory, f.fs, data, trial_request("all"));
        REQUIRE(p);
        REQUIRE_FALSE(p->refused());
        CHECK(test::file_of(*p, plan::k_trial_loader_entry) == nullptr);
        const auto* service = test::file_of(*p, plan::k_trial_service);
        REQUIRE(service != nullptr);
        CHECK(contains(service->after, "\nExecStartPre=-/usr/bin/grub-editenv /boot/grub/grubenv unset next_entry\n"));
        CHECK(plan::trial_reboot_step(*p).starts_with("GRUB boots the trial entry 'passthru-trial' once"));
    }

    TEST_CASE("refused: network changes")
    {
        auto grub = trial_fixture("epyc-4x2080ti");
        const data::DataDir data2(grub.fs, std::nullopt);
        auto r = trial_request("all");
        r.network = plan::NetworkRequest{};
        r.network->bond_slaves = {"enp66s0f0", "enp66s0f1"};
        r.network->address = "192.168.1.252/24";
        const auto n = plan::make_plan(grub.inventory, grub.fs, data2, r);
        REQUIRE(n);
        REQUIRE(n->refused());
        CHECK(n->refusals.front().message.find("--trial does not cover network changes") == 0);
    }

    TEST_CASE("a plan without --trial is the normal plan")
    {
        auto f = trial_fixture("epyc-4x2080ti");
        const data::DataDir data(f.fs, std::nullopt);
        const auto p = plan::make_plan(f.inventory, f.fs, data, trial_request("all", std::nullopt));
        REQUIRE(p);
        CHECK(test::file_of(*p, plan::k_trial_grub_script) == nullptr);
        CHECK(test::file_of(*p, "/etc/default/grub.d/passthru.cfg") != nullptr);
        CHECK(p->trial_args.empty());
        const auto* conf = test::file_of(*p, "/etc/modprobe.d/passthru-vfio.conf");
        REQUIRE(conf != nullptr);
        CHECK(contains(conf->after, "\noptions vfio-pci ids=10de:10f7,10de:1ad6,10de:1ad7,10de:1e07"));
        CHECK_FALSE(contains(conf->after, "passthru.trial"));
    }

    TEST_CASE("confirm plans the normal configuration for the trial's request")
    {
        auto f = trial_fixture("epyc-4x2080ti");
        const data::DataDir data(f.fs, std::nullopt);
        const auto p = plan::make_confirm_plan(f.inventory, f.fs, data, trial_request("all"));
        REQUIRE(p);
        REQUIRE_FALSE(p->refused());
        CHECK_FALSE(p->request.trial_minutes.has_value());
        CHECK(test::file_of(*p, "/etc/default/grub.d/passthru.cfg") != nullptr);
        CHECK(test::file_of(*p, plan::k_trial_grub_script) == nullptr); // nothing to remove on a host without a trial
        const auto cmds = test::command_lines(*p);
        CHECK(std::find(cmds.begin(), cmds.end(), "grub-reboot passthru-trial") == cmds.end());
    }

    TEST_CASE("confirm on systemd-boot: the arguments go into /etc/kernel/cmdline and the refresh runs")
    {
        auto zfs = trial_fixture("epyc-4x2080ti-zfs");
        const data::DataDir data(zfs.fs, std::nullopt);
        const auto p = plan::make_confirm_plan(zfs.inventory, zfs.fs, data, trial_request("all"));
        REQUIRE(p);
        REQUIRE_FALSE(p->refused());
        const auto* cmdline = test::file_of(*p, "/etc/kernel/cmdline");
        REQUIRE(cmdline != nullptr);
        CHECK(contains(cmdline->after, "iommu=pt"));
        CHECK_FALSE(contains(cmdline->after, "passthru.trial"));
        const auto cmds = test::command_lines(*p);
        CHECK(std::find(cmds.begin(), cmds.end(), "proxmox-boot-tool refresh") != cmds.end());
        // Nothing of a trial on this tree: nothing to remove, no helper to run.
        CHECK(test::file_of(*p, plan::k_trial_loader_entry) == nullptr);
        CHECK(
            std::none_of(cmds.begin(), cmds.end(), [](const std::string& c) { return c.find("trial-loader-entry") != std::string::npos; }));
    }
}
