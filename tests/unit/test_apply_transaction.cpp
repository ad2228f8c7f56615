// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>

#include "../support/temp_dir.hpp"
#include "apply/journal.hpp"
#include "apply/rollback.hpp"
#include "apply/transaction.hpp"
#include "util/sha256.hpp"

using passthru::test::TempDir;
using namespace passthru;
using namespace passthru::apply;

namespace {

mode_t mode_of(const std::filesystem::path& p)
{
    struct stat st
    {};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

// A small host: a kernel command line (mode 0600) and /etc/modules.
void make_host(const TempDir& root)
{
    root.write("etc/kernel/cmdline", "root=ZFS=rpool/ROOT/pve-1 boot=zfs\n");
    ::chmod((root.path() / "etc/kernel/cmdline").c_str(), 0600);
    root.write("etc/modules", "# /etc/modules\n");
}

// A change that rewrites an existing file of the tree.
plan::FileChange modify_change(const util::HostFs& fs, const std::string& path, std::string after)
{
    plan::FileChange change;
    change.path = path;
    change.action = plan::FileAction::modify;
    change.before = fs.read_file(path).value();
    change.before_sha256 = util::sha256_hex(*change.before);
    change.after = std::move(after);
    return change;
}

plan::Plan make_plan_by_hand(const util::HostFs& fs)
{
    plan::Plan p;
    p.files.push_back(modify_change(fs, "/etc/kernel/cmdline", "root=ZFS=rpool/ROOT/pve-1 boot=zfs iommu=pt\n"));
    p.files.push_back(modify_change(fs, "/etc/modules", "# /etc/modules\nvfio\nvfio_iommu_type1\nvfio_pci\n"));
    plan::FileChange conf;
    conf.path = "/etc/modprobe.d/passthru-vfio.conf";
    conf.action = plan::FileAction::create;
    conf.after = "options vfio-pci ids=10de:1e07,10de:10f7\n";
    conf.mode = 0644;
    p.files.push_back(conf);
    p.commands.push_back(plan::PlannedCommand{{"update-initramfs", "-u", "-k", "all"}, "rebuild the initramfs"});
    p.commands.push_back(plan::PlannedCommand{{"proxmox-boot-tool", "refresh"}, "copy kernels and cmdline to the ESPs"});
    return p;
}

} // namespace

TEST_SUITE("apply::transaction")
{
    TEST_CASE("apply writes the planned files, journals pre-images and commits")
    {
        TempDir root;
        make_host(root);
        auto fs = util::HostFs::open(root.path()).value();
        Journal journal(fs);
        util::CommandRunner runner(util::RunMode::record);
        const auto plan = make_plan_by_hand(fs);
        auto lock = journal.lock();
        REQUIRE(lock);
        const auto report = run_transaction(journal, runner, spec_from_plan(plan), {}, nullptr);
        CHECK(report.generation == 1);
        CHECK(report.written.size() == 3);
        CHECK(root.read("etc/kernel/cmdline") == "root=ZFS=rpool/ROOT/pve-1 boot=zfs iommu=pt\n");
        CHECK(mode_of(root.path() / "etc/kernel/cmdline") == 0600); // kept
        CHECK(mode_of(root.path() / "etc/modprobe.d/passthru-vfio.conf") == 0644);
        CHECK(root.read("var/lib/passthru/generations/1/before/etc/kernel/cmdline") == "root=ZFS=rpool/ROOT/pve-1 boot=zfs\n");
        CHECK(runner.recorded().size() == 2);

        auto m = journal.load(1);
        REQUIRE(m);
        CHECK(m->state == GenerationState::committed);
        CHECK(m->files.size() == 3);
        CHECK(m->files[0].mode == 0600);
        CHECK(m->files[2].before_sha256 == std::nullopt);
        CHECK(m->created_dirs == std::vector<std::string>{"/etc/modprobe.d"});
        CHECK(m->commands[0].status == CommandStatus::recorded);
        CHECK(journal.next_id() == 2);
    }

    TEST_CASE("a file changed since planning is refused and nothing is written")
    {
        TempDir root;
        make_host(root);
        auto fs = util::HostFs::open(root.path()).value();
        Journal journal(fs);
        util::CommandRunner runner(util::RunMode::record);
        const auto plan = make_plan_by_hand(fs);
        root.write("etc/modules", "# edited by the admin\n");
        try {
            run_transaction(journal, runner, spec_from_plan(plan), {}, nullptr);
            FAIL("expected a conflict");
        } catch (const Error& e) {
            CHECK(e.code() == Errc::conflict);
            CHECK(std::string(e.what()).find("/etc/modules changed since the plan was made") != std::string::npos);
        }
        CHECK(root.read("etc/kernel/cmdline") == "root=ZFS=rpool/ROOT/pve-1 boot=zfs\n");
        CHECK_FALSE(std::filesystem::exists(root.path() / "var/lib/passthru/generations"));
        CHECK_FALSE(std::filesystem::exists(root.path() / "etc/modprobe.d"));
    }

    TEST_CASE("a symlink or directory at a target is refused before anything is written")
    {
        TempDir root;
        make_host(root);
        auto fs = util::HostFs::open(root.path()).value();
        const auto plan = make_plan_by_hand(fs);
        std::filesystem::remove(root.path() / "etc/modules");
        SUBCASE("symlink")
        {
            std::filesystem::create_symlink("kernel/cmdline", root.path() / "etc/modules");
        }
        SUBCASE("directory")
        {
            std::filesystem::create_directory(root.path() / "etc/modules");
        }
        Journal journal(fs);
        util::CommandRunner runner(util::RunMode::record);
        CHECK_THROWS_AS(run_transaction(journal, runner, spec_from_plan(plan), {}, nullptr), Error);
        CHECK(root.read("etc/kernel/cmdline") == "root=ZFS=rpool/ROOT/pve-1 boot=zfs\n");
        CHECK(journal.ids().empty());
    }

    TEST_CASE("a failing step restores every file in reverse order")
    {
        TempDir root;
        make_host(root);
        auto fs = util::HostFs::open(root.path()).value();
        Journal journal(fs);
        util::CommandRunner runner(util::RunMode::record);
        auto plan = make_plan_by_hand(fs);
        // libvirt's test driver: under a --root tree, the only URIs passthru opens.
        plan.domains.push_back(plan::DomainChange{"test:///default", "ml", std::nullopt, "<domain/>", {}});
        DomainHooks hooks;
        hooks.define = [](const std::string&, const std::string&) -> Result<void> { return fail(Errc::io, "libvirt said no"); };
        bool restore_called = false;
        hooks.restore = [&](const plan::DomainChange& dc) -> Result<void> {
            restore_called = !dc.before_xml.has_value();
            return {};
        };
        std::vector<std::string> steps;
        Progress progress;
        progress.step = [&](std::string_view s) { steps.emplace_back(s); };
        try {
            run_transaction(journal, runner, spec_from_plan(plan), progress, &hooks);
            FAIL("expected failure");
        } catch (const Error& e) {
            CHECK(e.code() == Errc::io);
            CHECK(std::string(e.what()) == "libvirt said no");
        }
        CHECK(restore_called);
        CHECK(root.read("etc/kernel/cmdline") == "root=ZFS=rpool/ROOT/pve-1 boot=zfs\n");
        CHECK(root.read("etc/modules") == "# /etc/modules\n");
        CHECK_FALSE(std::filesystem::exists(root.path() / "etc/modprobe.d"));
        CHECK(runner.recorded().empty()); // after-steps never started, so none re-run
        auto m = journal.load(1);
        REQUIRE(m);
        CHECK(m->state == GenerationState::rolled_back);
        CHECK(m->error == "libvirt said no");
        // reverse order: the created file goes first
        auto first_restore = std::find_if(steps.begin(), steps.end(), [](const std::string& s) { return s.rfind("removing", 0) == 0; });
        auto cmdline_restore = std::find(steps.begin(), steps.end(), "restoring /etc/kernel/cmdline");
        CHECK(first_restore < cmdline_restore);
    }

    TEST_CASE("a failing after-step restores the files and is journaled as failed")
    {
        TempDir root;
        make_host(root);
        auto fs = util::HostFs::open(root.path()).value();
        Journal journal(fs);
        // `false` exits 1: a real command run on this machine, touching nothing.
        util::CommandRunner runner(util::RunMode::execute);
        auto plan = make_plan_by_hand(fs);
        plan.commands = {plan::PlannedCommand{{"false"}, "a step that fails"}};
        CHECK_THROWS_AS(run_transaction(journal, runner, spec_from_plan(plan), {}, nullptr), Error);
        CHECK(root.read("etc/modules") == "# /etc/modules\n");
        // Read without Journal::load, which refuses `false` as an after-step
        // passthru does not plan (apply/manifest_check).
        auto m = manifest_from_json(nlohmann::json::parse(root.read("var/lib/passthru/generations/1/manifest.json")));
        REQUIRE(m);
        CHECK(m->state == GenerationState::rolled_back);
        CHECK(m->commands_started);
        CHECK(m->commands[0].status == CommandStatus::failed);
    }

    TEST_CASE("an interrupted generation is restored byte for byte")
    {
        TempDir root;
        make_host(root);
        auto fs = util::HostFs::open(root.path()).value();
        Journal journal(fs);
        util::CommandRunner runner(util::RunMode::record);
        run_transaction(journal, runner, spec_from_plan(make_plan_by_hand(fs)), {}, nullptr);
        // Pretend the process died before the commit.
        auto m = journal.load(1).value();
        m.state = GenerationState::pending;
        REQUIRE(journal.save(m));
        auto found = find_interrupted(journal);
        REQUIRE(found);
        CHECK(found->id == 1);
        util::CommandRunner again(util::RunMode::record);
        auto report = restore_generation(journal, again, *found, {}, nullptr);
        CHECK(report.failures.empty());
        CHECK(report.restored.size() == 3);
        CHECK(report.commands_rerun);
        CHECK(again.recorded().size() == 2);
        CHECK(root.read("etc/kernel/cmdline") == "root=ZFS=rpool/ROOT/pve-1 boot=zfs\n");
        CHECK(mode_of(root.path() / "etc/kernel/cmdline") == 0600);
        CHECK_FALSE(std::filesystem::exists(root.path() / "etc/modprobe.d"));
        CHECK(journal.load(1)->state == GenerationState::rolled_back);
        CHECK_FALSE(find_interrupted(journal));
    }

    TEST_CASE("recovery's drift check: a file edited after the crash is named and can be kept")
    {
        TempDir root;
        make_host(root);
        auto fs = util::HostFs::open(root.path()).value();
        Journal journal(fs);
        util::CommandRunner runner(util::RunMode::record);
        run_transaction(journal, runner, spec_from_plan(make_plan_by_hand(fs)), {}, nullptr);
        auto m = journal.load(1).value();
        m.state = GenerationState::pending;
        REQUIRE(journal.save(m));
        // Each file as the generation wrote it, or as it was before: no drift.
        root.write("etc/modules", "# /etc/modules\n");
        CHECK(recovery_drift(journal, m).empty());
        // Edited after the crash: neither; a file it created and that was removed since is no drift.
        root.write("etc/modules", "# /etc/modules\nadmin\n");
        root.write("etc/modprobe.d/passthru-vfio.conf", "options vfio-pci ids=10de:1e07,10de:10f7\n# admin\n");
        std::filesystem::remove(root.path() / "etc/kernel/cmdline");
        const auto drifted = recovery_drift(journal, m);
        CHECK(drifted == std::vector<std::string>{"/etc/kernel/cmdline", "/etc/modules", "/etc/modprobe.d/passthru-vfio.conf"});
        keep_drifted(journal, m, drifted);
        CHECK(root.read("var/lib/passthru/generations/1/kept/etc/modules") == "# /etc/modules\nadmin\n");
        CHECK(root.read("var/lib/passthru/generations/1/kept/etc/modprobe.d/passthru-vfio.conf")
              == "options vfio-pci ids=10de:1e07,10de:10f7\n# admin\n");
        CHECK_FALSE(std::filesystem::exists(root.path() / "var/lib/passthru/generations/1/kept/etc/kernel/cmdline"));
    }

    TEST_CASE("a held lock is reported and hides a running apply from recovery")
    {
        TempDir root;
        make_host(root);
        auto fs = util::HostFs::open(root.path()).value();
        Journal journal(fs);
        // A generation still pending, as a running apply leaves it until it commits.
        util::CommandRunner runner(util::RunMode::record);
        run_transaction(journal, runner, spec_from_plan(make_plan_by_hand(fs)), {}, nullptr);
        auto m = journal.load(1).value();
        m.state = GenerationState::pending;
        REQUIRE(journal.save(m));
        CHECK_FALSE(journal.locked_by_other());
        {
            auto first = journal.lock();
            REQUIRE(first);
            auto second = journal.lock();
            REQUIRE_FALSE(second);
            CHECK(second.error().code() == Errc::conflict);
            CHECK(journal.locked_by_other());
            // Someone holds the lock: the pending generation is theirs, running, not interrupted.
            CHECK_FALSE(find_interrupted(journal));
            // The lock's holder itself sees it.
            auto own = find_interrupted(journal, LockHeld::by_us);
            REQUIRE(own);
            CHECK(own->id == 1);
        }
        // The lock gone with its process: the same generation is an interrupted one.
        CHECK_FALSE(journal.locked_by_other());
        auto found = find_interrupted(journal);
        REQUIRE(found);
        CHECK(found->id == 1);
    }
}

TEST_SUITE("apply::rollback")
{
    TEST_CASE("rollback undoes the newest generation, --to undoes back to before N")
    {
        TempDir root;
        make_host(root);
        auto fs = util::HostFs::open(root.path()).value();
        Journal journal(fs);
        util::CommandRunner runner(util::RunMode::record);
        run_transaction(journal, runner, spec_from_plan(make_plan_by_hand(fs)), {}, nullptr);
        // Generation 2 edits /etc/modules again and creates another file.
        plan::Plan second;
        plan::FileChange fc;
        fc.path = "/etc/modules";
        fc.action = plan::FileAction::modify;
        fc.before = fs.read_file("/etc/modules").value();
        fc.after = *fc.before + "kvm\n";
        second.files.push_back(fc);
        plan::FileChange extra;
        extra.path = "/etc/pve/mapping/pci.cfg"; // makes /etc/pve and /etc/pve/mapping
        extra.action = plan::FileAction::create;
        extra.after = "x\n";
        second.files.push_back(extra);
        run_transaction(journal, runner, spec_from_plan(second), {}, nullptr);
        CHECK(root.read("etc/modules") == "# /etc/modules\nvfio\nvfio_iommu_type1\nvfio_pci\nkvm\n");

        auto rb = plan_rollback(journal, std::nullopt, Force::no);
        CHECK(rb.undoes == std::vector<std::uint64_t>{2});
        run_transaction(journal, runner, rb.spec, {}, nullptr);
        CHECK(root.read("etc/modules") == "# /etc/modules\nvfio\nvfio_iommu_type1\nvfio_pci\n");
        CHECK_FALSE(std::filesystem::exists(root.path() / "etc/pve"));
        CHECK(journal.load(3)->kind == GenerationKind::rollback);

        // Only generation 1 is active now.
        auto all = journal.load_all();
        auto active = active_generations(all);
        REQUIRE(active.size() == 1);
        CHECK(active[0].id == 1);

        // Drift is refused unless forced.
        root.write("etc/modules", "# hand edit\n");
        CHECK_THROWS_AS(plan_rollback(journal, std::uint64_t{1}, Force::no), Error);
        auto forced = plan_rollback(journal, std::uint64_t{1}, Force::yes);
        CHECK(forced.drifted == std::vector<std::string>{"/etc/modules"});
        run_transaction(journal, runner, forced.spec, {}, nullptr);
        CHECK(root.read("etc/modules") == "# /etc/modules\n");
        CHECK(root.read("etc/kernel/cmdline") == "root=ZFS=rpool/ROOT/pve-1 boot=zfs\n");
        CHECK(mode_of(root.path() / "etc/kernel/cmdline") == 0600);
        CHECK_FALSE(std::filesystem::exists(root.path() / "etc/modprobe.d"));
        // The hand edit is kept as the pre-image of the rollback generation.
        CHECK(root.read("var/lib/passthru/generations/4/before/etc/modules") == "# hand edit\n");

        // Nothing left.
        CHECK_THROWS_AS(plan_rollback(journal, std::nullopt, Force::no), Error);
    }

    TEST_CASE("--to an unknown or inactive generation is refused")
    {
        TempDir root;
        make_host(root);
        auto fs = util::HostFs::open(root.path()).value();
        Journal journal(fs);
        util::CommandRunner runner(util::RunMode::record);
        run_transaction(journal, runner, spec_from_plan(make_plan_by_hand(fs)), {}, nullptr);
        CHECK_THROWS_AS(plan_rollback(journal, std::uint64_t{9}, Force::no), Error);
        run_transaction(journal, runner, plan_rollback(journal, std::nullopt, Force::no).spec, {}, nullptr);
        try {
            plan_rollback(journal, std::uint64_t{1}, Force::no);
            FAIL("expected refusal");
        } catch (const Error& e) {
            CHECK(e.code() == Errc::not_found); // nothing active at all
        }
    }
}
