// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "../support/temp_dir.hpp"
#include "apply/journal.hpp"
#include "apply/rollback.hpp"
#include "apply/transaction.hpp"
#include "plan/plan_json.hpp"
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
        cmd.status = CommandStatus::ran;
        cmd.exit_code = 0;
        m.commands.push_back(cmd);
        JournalCommand qm = journal_command({"qm", "set", "101", "--efidisk0", "local:1,efitype=4m"}, "efi");
        qm.status = CommandStatus::ran;
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

    TEST_CASE("the request and the selected cards are written with the plan's key sets and read back typed")
    {
        Manifest m;
        m.id = 4;
        m.created = "2025-01-01T00:00:00Z";
        m.request = plan::Request{};
        m.request->vm = "101";
        m.request->vmid = 101;
        m.request->gpus = "all";
        m.request->trial_minutes = 7;
        m.gpus.push_back(plan::SelectedGpu{"0000:01:00", "RTX", {"0000:01:00.0", "0000:01:00.1"}, {"10de:1e07", "10de:10f7"}, {12}, true});
        auto doc = to_json(m);
        CHECK(doc["request"] == plan::request_to_json(*m.request));
        CHECK(doc["gpus"][0] == plan::selected_gpu_to_json(m.gpus[0]));
        auto back = manifest_from_json(doc);
        REQUIRE(back);
        REQUIRE(back->request);
        CHECK(plan::request_to_json(*back->request) == plan::request_to_json(*m.request));
        CHECK(back->request->trial_minutes == 7);
        CHECK_FALSE(back->rollback_to_before);
        REQUIRE(back->gpus.size() == 1);
        CHECK(back->gpus[0].ids == m.gpus[0].ids);
        CHECK(back->gpus[0].iommu_groups == std::vector<int>{12});
        CHECK(back->gpus[0].boot_vga);
        CHECK(to_json(*back) == doc);

        // A rollback's request names the generation it went back before.
        Manifest r;
        r.id = 5;
        r.kind = GenerationKind::rollback;
        r.created = m.created;
        r.rollback_to_before = 4;
        CHECK(to_json(r)["request"] == nlohmann::json{{"rollback_to_before", 4}});
        auto rb = manifest_from_json(to_json(r));
        REQUIRE(rb);
        CHECK(rb->rollback_to_before == 4);
        CHECK_FALSE(rb->request);

        // Neither: null, and read back as neither.
        r.rollback_to_before.reset();
        CHECK(to_json(r)["request"].is_null());
        rb = manifest_from_json(to_json(r));
        REQUIRE(rb);
        CHECK_FALSE(rb->request);
        CHECK_FALSE(rb->rollback_to_before);
    }

    TEST_CASE("command statuses are one word each, both ways")
    {
        for (const auto status : {CommandStatus::planned, CommandStatus::recorded, CommandStatus::ran, CommandStatus::failed}) {
            CHECK(command_status_from(to_string(status)) == status);
        }
        CHECK(to_string(CommandStatus::recorded) == "recorded");
        CHECK_FALSE(command_status_from("run"));
        CHECK_FALSE(command_status_from(""));
    }

    TEST_CASE("a manifest as passthru.generation/2 was first written reads: three-member cards, a request not validated")
    {
        // The members an apply generation had before the cards were written
        // with the plan's key set; the request's VM is one a later check refuses.
        const auto doc = nlohmann::json::parse(R"({
          "schema": "passthru.generation/2", "id": 1, "kind": "apply", "state": "committed",
          "created": "2025-01-01T00:00:00Z", "finished": "2025-01-01T00:00:01Z", "passthru_version": "0.1",
          "request": {"vm": "abc", "vmid": null, "gpus": "all", "acs_override": false, "no_fabric": false,
                      "backend": "proxmox", "mapping": null, "connect_uri": null, "vm_profile": null, "network": null},
          "gpus": [{"slot": "0000:01:00", "functions": ["0000:01:00.0"], "iommu_groups": [3]}],
          "kernel_args": ["iommu=pt"], "undoes": [], "files": [], "created_dirs": [],
          "commands": [{"argv": ["update-grub"], "reason": "r", "status": "recorded", "exit_code": 0}],
          "commands_started": true, "domains": [], "error": null, "manual_steps": []})");
        auto m = manifest_from_json(doc);
        REQUIRE(m);
        REQUIRE(m->request);
        CHECK(m->request->vm == "abc");
        REQUIRE(m->gpus.size() == 1);
        CHECK(m->gpus[0].functions == std::vector<std::string>{"0000:01:00.0"});
        CHECK(m->gpus[0].iommu_groups == std::vector<int>{3});
        CHECK(m->gpus[0].name.empty());
        CHECK(m->commands[0].status == CommandStatus::recorded);

        // A command without a status was never run.
        auto no_status = doc;
        no_status["commands"][0].erase("status");
        REQUIRE(manifest_from_json(no_status));
        CHECK(manifest_from_json(no_status)->commands[0].status == CommandStatus::planned);
    }

    TEST_CASE("a damaged status, request or card makes a malformed manifest")
    {
        Manifest m;
        m.id = 2;
        m.created = "2025-01-01T00:00:00Z";
        m.request = plan::Request{};
        m.request->vm = "101";
        m.request->vmid = 101;
        m.request->gpus = "all";
        m.gpus.push_back(plan::SelectedGpu{"0000:01:00", "", {"0000:01:00.0"}, {}, {}, false});
        m.commands.push_back(journal_command({"update-grub"}, "why"));
        const auto doc = to_json(m);
        REQUIRE(manifest_from_json(doc));
        const auto refused = [](const nlohmann::json& d, const std::string& why) {
            auto r = manifest_from_json(d);
            REQUIRE_FALSE(r);
            CHECK(r.error().code() == Errc::parse);
            const std::string what = r.error().what();
            CHECK(what.find("generation 2 has a malformed manifest") != std::string::npos);
            CHECK_MESSAGE(what.find(why) != std::string::npos, what);
        };
        auto d = doc;
        d["commands"][0]["status"] = "exploded";
        refused(d, "unknown status of command 'update-grub'");
        d = doc;
        d["request"]["vm"] = 101;
        refused(d, "request.vm must be a string");
        d = doc;
        d["request"]["backend"] = "xen";
        refused(d, "request.backend must be proxmox or libvirt");
        d = doc;
        d["request"] = "--vm 101";
        refused(d, "request must be an object");
        d = doc;
        d["request"] = nlohmann::json{{"rollback_to_before", "one"}};
        refused(d, "rollback_to_before is not a generation number");
        d = doc;
        d["gpus"][0].erase("slot");
        refused(d, "gpus[0].slot is missing");
        d = doc;
        d["gpus"][0]["iommu_groups"] = {"x"};
        refused(d, "gpus[0].iommu_groups must hold integers");
        d = doc;
        d["gpus"] = {7};
        refused(d, "gpus[0] must be an object");
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
        run_transaction(journal, runner, spec_from_plan(p), {}, nullptr);
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
