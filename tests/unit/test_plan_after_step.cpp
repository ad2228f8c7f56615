// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include "plan/after_step.hpp"
#include "plan/trial.hpp"

using namespace passthru::plan;

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
}
