// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include "apply/manifest_check.hpp"
#include "plan/trial.hpp"

using namespace passthru;
using namespace passthru::apply;

namespace {

const std::string k_sha(64, 'a');

Manifest good()
{
    Manifest m;
    m.id = 2;
    m.files.push_back(JournalFile{"/etc/modprobe.d/passthru-vfio.conf", FileAction::create, std::nullopt, k_sha, 0644, 0, 0});
    m.files.push_back(JournalFile{"/etc/pve/qemu-server/101.conf", FileAction::modify, k_sha, k_sha, 0640, 0, 33});
    m.files.push_back(JournalFile{"/etc/default/grub", FileAction::modify, k_sha, k_sha, 0644, 0, 0});
    m.files.push_back(JournalFile{"/etc/pve/mapping/pci.cfg", FileAction::create, std::nullopt, k_sha, 0640, 0, 33});
    m.created_dirs = {"/etc/pve/mapping"};
    m.commands.push_back(journal_command({"update-initramfs", "-u", "-k", "all"}, ""));
    m.commands.push_back(journal_command({"update-grub"}, ""));
    m.commands.push_back(journal_command({"proxmox-boot-tool", "refresh"}, ""));
    m.commands.push_back(journal_command({"qm", "set", "101", "--efidisk0", "local:1,efitype=4m,pre-enrolled-keys=1"}, ""));
    m.commands.back().created.push_back(JournalResource{"volume", "local:101/vm-101-disk-1.raw", "101", "efidisk0"});
    m.commands.push_back(journal_command({"grub-reboot", "passthru-trial"}, ""));
    m.commands.push_back(journal_command({"grub-editenv", "/boot/grub/grubenv", "unset", "next_entry"}, ""));
    m.files.push_back(JournalFile{"/etc/passthru/trial-loader-entry.conf", FileAction::create, std::nullopt, k_sha, 0644, 0, 0});
    m.commands.push_back(journal_command({plan::trial_loader_helper(), "install", "/etc/passthru/trial-loader-entry.conf"}, ""));
    m.commands.push_back(journal_command({plan::trial_loader_helper(), "remove"}, ""));
    m.undoes = {1};
    return m;
}

bool refused(const Manifest& m)
{
    auto r = check_manifest(m, allowed_owners(0, 0));
    return !r && r.error().code() == Errc::precondition;
}

} // namespace

TEST_SUITE("apply::manifest_check")
{
    TEST_CASE("a manifest passthru writes passes")
    {
        CHECK(check_manifest(good(), allowed_owners(0, 0)));
    }

    TEST_CASE("paths outside what the planners write, or not normalised, are refused")
    {
        for (const char* path : {"/etc/modprobe.d/../../root/.ssh/authorized_keys", "/root/.ssh/authorized_keys", "/usr/local/bin/x",
                                 "etc/modules", "/etc//modules", "/etc/modules/", "/etc/modprobe.d/.x.conf", "/etc/modprobe.d/x.sh",
                                 "/etc/systemd/system/evil.service", "/etc/modprobe.d/./x.conf", "/etc/passwd"}) {
            Manifest m = good();
            m.files[0].path = path;
            CAPTURE(path);
            CHECK(refused(m));
        }
    }

    TEST_CASE("modes and owners passthru never restores are refused")
    {
        for (mode_t mode : {04777, 02755, 01644, 0666, 0602}) {
            Manifest m = good();
            m.files[2].mode = mode;
            CAPTURE(mode);
            CHECK(refused(m));
        }
        Manifest m = good();
        m.files[2].uid = 1000;
        CHECK(refused(m));
        // Under a --root that uid 1000 owns, its files are 1000's.
        CHECK(check_manifest(m, allowed_owners(1000, 1000)));
    }

    TEST_CASE("a file whose action and checksums disagree is refused (before_sha256 null deletes)")
    {
        Manifest m = good();
        m.files[2].before_sha256 = std::nullopt; // "modify", but rollback would delete it
        CHECK(refused(m));
        m = good();
        m.files[1].before_sha256 = "not-hex";
        CHECK(refused(m));
    }

    TEST_CASE("created directories must hold a journaled file")
    {
        Manifest m = good();
        m.created_dirs = {"/etc"};
        CHECK_FALSE(refused(m)); // /etc holds them: removed only when empty
        m.created_dirs = {"/var/lib/important"};
        CHECK(refused(m));
        m.created_dirs = {"/etc/pve/mapping/.."};
        CHECK(refused(m));
    }

    TEST_CASE("after-steps are matched by their full argv, never by the basename")
    {
        for (const auto& argv : std::vector<std::vector<std::string>>{{"/tmp/evil/update-initramfs", "-u", "-k", "all"},
                                                                      {"update-initramfs", "-c", "-k", "6.8"},
                                                                      {"update-grub", "--extra"},
                                                                      {"sh", "-c", "id"},
                                                                      {"grub-reboot", "other"},
                                                                      {"pvesm", "free", "local:../../etc"},
                                                                      {"qm", "set", "101", "--delete", "scsi0"},
                                                                      {"qm", "create", "1"},
                                                                      {"update-grub\n"},
                                                                      {"/tmp/evil/trial-loader-entry", "remove"},
                                                                      {plan::trial_loader_helper(), "install", "/etc/shadow"},
                                                                      {plan::trial_loader_helper(), "remove", "x"}}) {
            Manifest m = good();
            m.commands.push_back(journal_command(argv, ""));
            CAPTURE(argv.front());
            CHECK(refused(m));
        }
        CHECK(plan::after_step_effects({"/tmp/evil/update-grub"}).undo == plan::StepUndo::manual);
    }

    TEST_CASE("volumes, domain names and undone generations follow their grammars")
    {
        Manifest m = good();
        m.commands[3].created[0].id = "local:/etc/passwd";
        CHECK(refused(m));
        m = good();
        m.domains.push_back(JournalDomain{"test:///default", "../../x", false, k_sha});
        CHECK(refused(m));
        m = good();
        m.undoes = {2};
        CHECK(refused(m));
    }
}
