// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "../support/temp_dir.hpp"
#include "apply/journal.hpp"
#include "apply/rollback.hpp"
#include "apply/transaction.hpp"
#include "util/command_runner.hpp"
#include "util/sha256.hpp"

using passthru::test::TempDir;
using namespace passthru;
using namespace passthru::apply;

TEST_SUITE("apply::journal")
{
    TEST_CASE("the lock leaves nothing behind that taking it created")
    {
        namespace fs = std::filesystem;
        TempDir root;
        root.write("etc/hostname", "pve\n");
        auto hfs = util::HostFs::open(root.path()).value();
        const Journal journal(hfs);
        {
            auto lock = journal.lock();
            REQUIRE(lock);
            CHECK(fs::exists(root.path() / "var/lib/passthru/lock"));
            CHECK(journal.locked_by_other());
            auto moved = std::move(*lock); // a moved-from lock releases nothing
        }
        // var, var/lib and var/lib/passthru were made for the lock: all gone again
        CHECK_FALSE(fs::exists(root.path() / "var"));
        CHECK_FALSE(journal.locked_by_other());

        // What was there before stays; what was written under the lock stays.
        root.write("var/lib/dpkg/status", "");
        {
            auto lock = journal.lock();
            REQUIRE(lock);
            root.write("var/lib/passthru/generations/1/manifest.json", "{}");
        }
        CHECK_FALSE(fs::exists(root.path() / "var/lib/passthru/lock"));
        CHECK(fs::exists(root.path() / "var/lib/passthru/generations/1/manifest.json"));
        // a lock file that was there before is kept
        root.write("var/lib/passthru/lock", "");
        {
            auto lock = journal.lock();
            REQUIRE(lock);
        }
        CHECK(fs::exists(root.path() / "var/lib/passthru/lock"));
        // and a lock whose file was unlinked by its last holder is taken anew
        fs::remove(root.path() / "var/lib/passthru/lock");
        auto again = journal.lock();
        REQUIRE(again);
        CHECK(journal.locked_by_other());
    }

    TEST_CASE("taking the lock sweeps what killed writes left in the journal")
    {
        namespace fs = std::filesystem;
        TempDir root;
        root.write("var/lib/passthru/generations/1/manifest.json", "{}");
        root.write("var/lib/passthru/generations/1/.manifest.json.passthru-42", "stale");
        root.write("var/lib/passthru/generations/1/before/etc/.modules.passthru-7", "stale");
        root.write("var/lib/passthru/generations/1/before/etc/modules", "pre-image");
        root.write("var/lib/passthru/generations/1/before/etc/.modules.passthru-x", "not a temporary name");
        root.write("var/lib/passthru/generations/2/before/etc/modules", "of a generation that died before its manifest");
        root.write("var/lib/passthru/generations/007/before/etc/modules", "not passthru's numbering");
        auto hfs = util::HostFs::open(root.path()).value();
        const Journal journal(hfs);
        CHECK(journal.ids() == std::vector<std::uint64_t>{1});
        {
            auto lock = journal.lock();
            REQUIRE(lock);
        }
        const fs::path g = root.path() / "var/lib/passthru/generations";
        CHECK_FALSE(fs::exists(g / "1/.manifest.json.passthru-42"));
        CHECK_FALSE(fs::exists(g / "1/before/etc/.modules.passthru-7"));
        CHECK(fs::exists(g / "1/manifest.json"));
        CHECK(fs::exists(g / "1/before/etc/modules"));
        CHECK(fs::exists(g / "1/before/etc/.modules.passthru-x"));
        CHECK_FALSE(fs::exists(g / "2"));
        CHECK(fs::exists(g / "007/before/etc/modules"));
    }

    TEST_CASE("a manifest that is not a regular file hides no generation")
    {
        namespace fs = std::filesystem;
        TempDir root;
        fs::create_directories(root.path() / "var/lib/passthru/generations/3/manifest.json");
        auto hfs = util::HostFs::open(root.path()).value();
        const Journal journal(hfs);
        CHECK(journal.ids() == std::vector<std::uint64_t>{3});
        CHECK(journal.next_id() == 4);
        auto m = journal.load(3);
        REQUIRE_FALSE(m);
        CHECK(std::string(m.error().what()).find("not a regular file") != std::string::npos);
    }

    TEST_CASE("manifest JSON round trip")
    {
        Manifest m;
        m.id = 7;
        m.kind = GenerationKind::rollback;
        m.state = GenerationState::restore_failed;
        m.created = "2025-01-01T00:00:00Z";
        m.undoes = {5, 6};
        m.files.push_back(JournalFile{"/etc/x", FileAction::create, std::nullopt, "ab", 0640, 1, 2});
        JournalCommand cmd = journal_command({"update-grub"}, "why");
        cmd.status = "ran";
        cmd.exit_code = 0;
        m.commands.push_back(cmd);
        JournalCommand qm = journal_command({"qm", "set", "101", "--efidisk0", "local:1,efitype=4m"}, "efi");
        qm.status = "ran";
        qm.created.push_back(JournalResource{"volume", "local:101/vm-101-disk-0.raw", "101", "efidisk0"});
        m.commands.push_back(qm);
        m.manual_steps = {"do this"};
        auto back = manifest_from_json(to_json(m));
        REQUIRE(back);
        CHECK(back->id == 7);
        CHECK(back->kind == GenerationKind::rollback);
        CHECK(back->state == GenerationState::restore_failed);
        CHECK(back->files[0].mode == 0640);
        CHECK(back->files[0].gid == 2);
        CHECK(back->commands[0].exit_code == 0);
        CHECK(back->commands[0].undo == plan::StepUndo::rerun);
        CHECK(back->commands[1].undo == plan::StepUndo::files);
        CHECK(back->commands[1].edits == std::vector<std::string>{"/etc/pve/qemu-server/101.conf"});
        REQUIRE(back->commands[1].created.size() == 1);
        CHECK(back->commands[1].created[0].id == "local:101/vm-101-disk-0.raw");
        CHECK(back->commands[1].created[0].config_key == "efidisk0");
        CHECK(back->undoes == std::vector<std::uint64_t>{5, 6});
        CHECK_FALSE(manifest_from_json(nlohmann::json{{"schema", "other"}}));
    }

    TEST_CASE("file actions are written in the plan's words and journals of schema 1 still read")
    {
        Manifest m;
        m.id = 3;
        m.created = "2025-01-01T00:00:00Z";
        m.files.push_back(JournalFile{"/etc/x", FileAction::remove, "ab", std::nullopt, 0644, 0, 0});
        auto doc = to_json(m);
        CHECK(doc["schema"] == "passthru.generation/2");
        CHECK(doc["files"][0]["action"] == "delete");
        CHECK(plan::to_string(FileAction::remove) == "delete");

        // A manifest written before the vocabulary was unified.
        auto old = doc;
        old["schema"] = "passthru.generation/1";
        old["files"][0]["action"] = "remove";
        auto back = manifest_from_json(old);
        REQUIRE(back);
        CHECK(back->files[0].action == FileAction::remove);

        // "remove" is not a word of schema 2.
        auto mixed = doc;
        mixed["files"][0]["action"] = "remove";
        CHECK_FALSE(manifest_from_json(mixed));
    }

    TEST_CASE("a generation journaled with schema 1 rolls back byte for byte")
    {
        TempDir root;
        root.write("etc/modules", "# /etc/modules\nvfio\n");
        root.write("etc/modprobe.d/old.conf", "options kvm ignore_msrs=1\n");
        auto fs = util::HostFs::open(root.path()).value();
        Journal journal(fs);
        util::CommandRunner runner(util::RunMode::record);

        plan::Plan p;
        plan::FileChange gone;
        gone.path = "/etc/modprobe.d/old.conf";
        gone.action = plan::FileAction::remove;
        gone.before = fs.read_file(gone.path).value();
        gone.before_sha256 = util::sha256_hex(*gone.before);
        p.files.push_back(gone);
        plan::FileChange edit;
        edit.path = "/etc/modules";
        edit.action = plan::FileAction::modify;
        edit.before = fs.read_file(edit.path).value();
        edit.before_sha256 = util::sha256_hex(*edit.before);
        edit.after = *edit.before + "vfio_pci\n";
        p.files.push_back(edit);
        run_transaction(journal, runner, spec_from_plan(p, nullptr), {}, nullptr);
        CHECK_FALSE(std::filesystem::exists(root.path() / "etc/modprobe.d/old.conf"));

        // Rewrite the manifest as an older passthru wrote it.
        const auto path = root.path() / "var/lib/passthru/generations/1/manifest.json";
        auto doc = nlohmann::json::parse(root.read("var/lib/passthru/generations/1/manifest.json"));
        REQUIRE(doc["files"][0]["action"] == "delete");
        doc["schema"] = "passthru.generation/1";
        doc["files"][0]["action"] = "remove";
        std::ofstream(path) << doc.dump(2) << "\n";

        auto rb = plan_rollback(journal, std::nullopt, Force::no);
        CHECK(rb.undoes == std::vector<std::uint64_t>{1});
        run_transaction(journal, runner, rb.spec, {}, nullptr);
        CHECK(root.read("etc/modprobe.d/old.conf") == "options kvm ignore_msrs=1\n");
        CHECK(root.read("etc/modules") == "# /etc/modules\nvfio\n");
    }
}
