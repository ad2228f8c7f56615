// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include "plan/after_step.hpp"
#include "plan/paths.hpp"
#include "plan/plan.hpp"
#include "plan/trial.hpp"
#include "util/host_fs.hpp"

using namespace passthru::plan;

namespace {

// An argv of KIND, built by the table's function for it.
std::vector<std::string> sample_step_argv(StepKind kind)
{
    switch (kind) {
    case StepKind::update_initramfs:
        return update_initramfs_argv();
    case StepKind::boot_refresh:
        return update_grub_argv();
    case StepKind::ifreload:
        return ifreload_argv();
    case StepKind::qm_set_efidisk:
        return qm_set_efidisk_argv("101", "local-lvm:1,efitype=4m,pre-enrolled-keys=0");
    case StepKind::qm_create:
        return qm_create_argv("120", {"--name", "gpu-120", "--bios", "ovmf"});
    case StepKind::grub_reboot:
        return grub_reboot_argv();
    case StepKind::grub_editenv_unset:
        return grub_editenv_unset_argv();
    case StepKind::trial_loader_install:
        return trial_loader_install_argv();
    case StepKind::trial_loader_remove:
        return trial_loader_remove_argv();
    case StepKind::pvesm_free:
        return free_volume_argv("local-lvm:vm-101-disk-1");
    }
    return {};
}

} // namespace

TEST_SUITE("plan/after_step")
{
    TEST_CASE("the boot and network regenerators are undone by running them again")
    {
        for (const auto& argv : std::vector<std::vector<std::string>>{
                 {"update-initramfs", "-u", "-k", "all"}, {"update-grub"}, {"proxmox-boot-tool", "refresh"}, {"ifreload", "-a"}}) {
            const auto e = after_step_effects(argv);
            CHECK(e.undo == StepUndo::rerun);
            CHECK(e.edits.empty());
            CHECK(e.creates.empty());
        }
    }

    TEST_CASE("qm set --efidisk0 edits the VM config and allocates a volume named there")
    {
        const auto e = after_step_effects({"qm", "set", "101", "--efidisk0", "local-lvm:1,efitype=4m,pre-enrolled-keys=0"});
        CHECK(e.undo == StepUndo::files);
        CHECK(e.edits == std::vector<std::string>{"/etc/pve/qemu-server/101.conf"});
        REQUIRE(e.creates.size() == 1);
        CHECK(e.creates[0].kind == "volume");
        CHECK(e.creates[0].vm == "101");
        CHECK(e.creates[0].config_key == "efidisk0");
        CHECK(e.creates[0].config_path == "/etc/pve/qemu-server/101.conf");
        CHECK(free_volume_argv("local:101/vm-101-disk-1.raw") == std::vector<std::string>{"pvesm", "free", "local:101/vm-101-disk-1.raw"});
    }

    TEST_CASE("grub-reboot is undone by unsetting GRUB's one-time selection, which rollback runs")
    {
        const auto e = after_step_effects({"grub-reboot", "passthru-trial"});
        CHECK(e.undo == StepUndo::command);
        CHECK(e.undo_argv == std::vector<std::string>{"grub-editenv", "/boot/grub/grubenv", "unset", "next_entry"});
        CHECK(e.edits.empty());
        CHECK(to_string(StepUndo::command) == "command");
        CHECK(after_step_effects(e.undo_argv).undo == StepUndo::files);
    }

    TEST_CASE("the systemd-boot trial's helper: install is undone by its remove, which rollback runs")
    {
        const std::string helper = trial_loader_helper();
        const auto e = after_step_effects({helper, "install", std::string(k_trial_loader_entry)});
        CHECK(e.undo == StepUndo::command);
        CHECK(e.undo_argv == std::vector<std::string>{helper, "remove"});
        CHECK(e.edits.empty());
        CHECK(e.what.find("passthru-trial.conf") != std::string::npos);
        const auto r = after_step_effects(e.undo_argv);
        CHECK(r.undo == StepUndo::files);
        CHECK(r.undo_argv.empty());
        CHECK(after_step_effects({helper, "status"}).undo == StepUndo::manual);
    }

    TEST_CASE("qm create and unknown commands have no automatic undo, and say what to do by hand")
    {
        const auto create = after_step_effects({"qm", "create", "120", "--name", "gpu-120"});
        CHECK(create.undo == StepUndo::manual);
        REQUIRE(create.manual.size() == 1);
        CHECK(create.manual[0].rfind("qm destroy 120", 0) == 0);
        CHECK(after_step_effects({"qm", "set", "101", "--memory", "4096"}).undo == StepUndo::manual);
        CHECK(after_step_effects({"frobnicate"}).undo == StepUndo::manual);
        CHECK(after_step_effects({}).undo == StepUndo::manual);
        CHECK(to_string(StepUndo::files) == "files");
    }

    TEST_CASE("every row: its argv is recognised as its own kind, by apply and by rollback's shape check")
    {
        REQUIRE(after_steps().size() == static_cast<std::size_t>(StepKind::pvesm_free) + 1);
        for (std::size_t i = 0; i < after_steps().size(); ++i) {
            const StepRow& row = after_steps()[i];
            CAPTURE(i);
            CHECK(static_cast<std::size_t>(row.kind) == i);
            CHECK(&after_step(row.kind) == &row);
            const auto argv = sample_step_argv(row.kind);
            REQUIRE_FALSE(argv.empty());
            CAPTURE(argv.front());
            CHECK((row.program.empty() ? row.kind == StepKind::boot_refresh : passthru::util::base_name(argv.front()) == row.program));
            CHECK(step_kind(argv) == row.kind);
            CHECK(recorded_step_kind(argv) == row.kind);
            CHECK(is_boot_refresh_step(argv) == row.boot_refresh);
            CHECK((row.needed_by == nullptr) == (row.argv == nullptr)); // a file-derived step builds its own argv
            const auto e = after_step_effects(argv);
            CHECK_FALSE(e.what.empty());
            CHECK(e.what != after_step_effects({"frobnicate"}).what);
            if (e.undo == StepUndo::command) {
                CHECK(recorded_step_kind(e.undo_argv).has_value());
            }
            if (e.undo == StepUndo::manual) {
                CHECK_FALSE(e.manual.empty());
            }
            CHECK((row.needed_by == nullptr) == (row.why == nullptr));
        }
    }

    TEST_CASE("rollback's shapes are exact: a path, other arguments or another entry are not a planned step")
    {
        for (const auto& argv : std::vector<std::vector<std::string>>{{"/usr/sbin/update-grub"},
                                                                      {"update-initramfs", "-c", "-k", "6.8"},
                                                                      {"ifreload", "-a", "-f"},
                                                                      {"grub-reboot", "other"},
                                                                      {"qm", "create", "1"},
                                                                      {"qm", "set", "101", "--delete", "scsi0"},
                                                                      {"pvesm", "free", "local:../../etc"},
                                                                      {"proxmox-boot-tool", "status"}}) {
            CAPTURE(argv.front());
            CHECK_FALSE(recorded_step_kind(argv).has_value());
        }
        // apply still knows the effects of the system directories' copy.
        CHECK(step_kind({"/usr/sbin/update-grub"}) == StepKind::boot_refresh);
        CHECK_FALSE(step_kind({"/tmp/x/update-grub"}).has_value());
    }

    TEST_CASE("the files a plan writes call for the after-steps")
    {
        using passthru::scan::Bootloader;
        const std::vector<std::string> modprobe{"/etc/modprobe.d/passthru-vfio.conf"};
        const std::vector<std::string> initramfs{std::string(k_initramfs_modules)};
        const std::vector<std::string> modules_load{std::string(k_modules_load_conf), std::string(k_modules)};
        const std::vector<std::string> grub{std::string(k_grub_dropin), "/etc/default/grub"};
        const std::vector<std::string> kernel_cmdline{"/etc/kernel/cmdline"};
        const std::vector<std::string> network{std::string(k_interfaces)};
        CHECK(steps_for_files(modprobe, Bootloader::grub) == std::vector<StepKind>{StepKind::update_initramfs});
        CHECK(steps_for_files(initramfs, Bootloader::unknown) == std::vector<StepKind>{StepKind::update_initramfs});
        CHECK(steps_for_files(modules_load, Bootloader::grub).empty());
        CHECK(steps_for_files(grub, Bootloader::grub) == std::vector<StepKind>{StepKind::boot_refresh});
        CHECK(steps_for_files(grub, Bootloader::grub_proxmox_boot) == std::vector<StepKind>{StepKind::boot_refresh});
        CHECK(steps_for_files(grub, Bootloader::systemd_boot).empty());
        CHECK(steps_for_files(kernel_cmdline, Bootloader::systemd_boot) == std::vector<StepKind>{StepKind::boot_refresh});
        CHECK(steps_for_files(kernel_cmdline, Bootloader::unknown).empty());
        CHECK(steps_for_files({std::string(k_interfaces_new)}, Bootloader::grub).empty());
        std::vector<std::string> all = network;
        all.insert(all.end(), grub.begin(), grub.end());
        all.insert(all.end(), modprobe.begin(), modprobe.end());
        CHECK(steps_for_files(all, Bootloader::grub)
              == std::vector<StepKind>{StepKind::update_initramfs, StepKind::boot_refresh, StepKind::ifreload});
    }

    TEST_CASE("the boot refresh is one row: every boot loader's refresh, from the boot-loader table")
    {
        using passthru::scan::Bootloader;
        const auto& row = after_step(StepKind::boot_refresh);
        for (const auto& spec : passthru::scan::boot_loaders()) {
            CAPTURE(spec.name);
            CHECK(row.argv(spec.id) == spec.refresh);
            if (spec.refresh.empty()) {
                CHECK_FALSE(row.needed_by(spec.cmdline_file, spec.id));
                continue;
            }
            CHECK(row.why(spec.id) == spec.refresh_reason);
            CHECK(row.needed_by(spec.cmdline_file, spec.id));
            CHECK(step_kind(spec.refresh) == StepKind::boot_refresh);
            CHECK(recorded_step_kind(spec.refresh) == StepKind::boot_refresh);
            CHECK(is_boot_refresh_step(spec.refresh));
        }
        // Any arguments of a refresh program are its effects (apply); only the planned argv is its shape (rollback).
        CHECK(step_kind({"/usr/sbin/proxmox-boot-tool", "status"}) == StepKind::boot_refresh);
        CHECK_FALSE(recorded_step_kind({"update-grub", "-v"}).has_value());
    }

    TEST_CASE("a trial's update-grub does not stand in for a proxmox-boot-tool host's refresh")
    {
        Plan plan;
        plan.commands.push_back({update_grub_argv(), "the trial entry"});
        plan.files.push_back(FileChange{});
        plan.files.back().path = std::string(k_grub_dropin);
        add_file_steps(plan, passthru::scan::Bootloader::grub_proxmox_boot);
        REQUIRE(plan.commands.size() == 2);
        CHECK(plan.commands[1].argv == proxmox_boot_refresh_argv());
        add_file_steps(plan, passthru::scan::Bootloader::grub);
        CHECK(plan.commands.size() == 2);
    }

    TEST_CASE("add_file_steps plans each called-for step once, with its reason")
    {
        Plan plan;
        plan.files.push_back(FileChange{});
        plan.files.back().path = std::string(k_modprobe_conf);
        plan.files.push_back(FileChange{});
        plan.files.back().path = "/etc/kernel/cmdline";
        add_file_steps(plan, passthru::scan::Bootloader::systemd_boot);
        add_file_steps(plan, passthru::scan::Bootloader::systemd_boot);
        REQUIRE(plan.commands.size() == 2);
        CHECK(plan.commands[0].argv == update_initramfs_argv());
        CHECK(plan.commands[1].argv == proxmox_boot_refresh_argv());
        CHECK_FALSE(plan.commands[0].reason.empty());
        CHECK(plan.commands[1].reason == passthru::scan::boot_loader(passthru::scan::Bootloader::systemd_boot).refresh_reason);
    }
}
