// SPDX-License-Identifier: GPL-2.0-or-later
// plan/saved_plan: a saved plan is compared with the plan passthru makes
// again for its request; everything it adds, drops or alters is named.
#include <doctest/doctest.h>

#include <algorithm>

#include "plan/saved_plan.hpp"

using namespace passthru;

namespace {

plan::Plan derived_plan()
{
    plan::Plan p;
    p.request.vm = "101";
    p.request.vmid = 101;
    p.request.gpus = "all";
    plan::FileChange conf;
    conf.path = "/etc/modprobe.d/passthru-vfio.conf";
    conf.action = plan::FileAction::create;
    conf.after = "options vfio-pci ids=10de:1e07\n";
    conf.reasons = {"binds the card by id"};
    p.files = {conf};
    p.commands = {{{"update-initramfs", "-u", "-k", "all"}, "rebuild the initramfs"}};
    p.vfio_ids = {"10de:1e07"};
    p.binding = "ids";
    return p;
}

bool names(const std::vector<std::string>& diffs, std::string_view what)
{
    return std::any_of(diffs.begin(), diffs.end(), [&](const std::string& d) { return d.find(what) != std::string::npos; });
}

} // namespace

TEST_SUITE("plan::saved_plan")
{
    TEST_CASE("the same plan has no differences")
    {
        CHECK(plan::saved_plan_differences(derived_plan(), derived_plan()).empty());
    }

    TEST_CASE("a file the planners do not produce, and one they produce left out")
    {
        auto saved = derived_plan();
        plan::FileChange keys;
        keys.path = "/root/.ssh/authorized_keys";
        keys.after = "ssh-ed25519 AAAA attacker\n";
        saved.files.push_back(keys);
        auto diffs = plan::saved_plan_differences(saved, derived_plan());
        REQUIRE(diffs.size() == 1);
        CHECK(names(diffs, "it changes /root/.ssh/authorized_keys, which passthru does not plan"));

        saved.files.erase(saved.files.begin());
        diffs = plan::saved_plan_differences(saved, derived_plan());
        CHECK(names(diffs, "it leaves out /etc/modprobe.d/passthru-vfio.conf"));
    }

    TEST_CASE("a planned file named twice: the second entry is a difference")
    {
        auto saved = derived_plan();
        auto second = saved.files.front();
        second.after = "install vfio-pci /bin/sh -c 'touch /pwned'\n";
        saved.files.push_back(second);
        const auto diffs = plan::saved_plan_differences(saved, derived_plan());
        REQUIRE(diffs.size() == 1);
        CHECK(names(diffs, "it changes /etc/modprobe.d/passthru-vfio.conf more than once"));
        // the same entry twice, byte for byte, is refused the same
        saved.files.back() = saved.files.front();
        CHECK(names(plan::saved_plan_differences(saved, derived_plan()), "more than once"));
    }

    TEST_CASE("a mode, a content, an action of a planned file")
    {
        auto saved = derived_plan();
        saved.files[0].mode = 04755;
        CHECK(names(plan::saved_plan_differences(saved, derived_plan()), "passthru-vfio.conf: its mode is not what passthru plans"));
        saved = derived_plan();
        saved.files[0].after = "install vfio_pci /bin/sh -c id\n";
        CHECK(names(plan::saved_plan_differences(saved, derived_plan()), "passthru-vfio.conf: its content is not what passthru plans"));
        saved = derived_plan();
        saved.files[0].action = plan::FileAction::remove;
        saved.files[0].after.reset();
        CHECK(names(plan::saved_plan_differences(saved, derived_plan()), "its action is not what passthru plans"));
    }

    TEST_CASE("after-steps: an added command, an altered one, one left out")
    {
        auto saved = derived_plan();
        saved.commands.push_back({{"sh", "-c", "id"}, "harmless"});
        CHECK(names(plan::saved_plan_differences(saved, derived_plan()), "after-step 2 'sh -c id' is not what passthru plans"));
        saved = derived_plan();
        saved.commands[0].argv = {"update-initramfs", "-u", "-k", "all", "-v"};
        CHECK(names(plan::saved_plan_differences(saved, derived_plan()), "('update-initramfs -u -k all')"));
        saved.commands.clear();
        CHECK(names(plan::saved_plan_differences(saved, derived_plan()), "it leaves out after-step 'update-initramfs -u -k all'"));
    }

    TEST_CASE("everything else: the cards, the binding, refusals taken out")
    {
        auto saved = derived_plan();
        saved.vfio_ids.push_back("8086:a282"); // the SATA controller
        CHECK(names(plan::saved_plan_differences(saved, derived_plan()), "its vfio_ids is not what passthru plans"));
        auto derived = derived_plan();
        derived.refusals.push_back({"the group is shared", {}});
        CHECK(names(plan::saved_plan_differences(derived_plan(), derived), "its refusals is not what passthru plans"));
    }
}
