// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "../support/shipped_data.hpp"
#include "apply/manifest_check.hpp"
#include "plan/after_step.hpp"
#include "plan/paths.hpp"
#include "plan/trial.hpp"
#include "scan/boot_loader.hpp"

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

// The requests whose plans the fixture test makes on a host: the GPUs into VM
// 101, with a cluster mapping, as a trial, and a bond of the host's first two
// NICs with their names pinned.
std::vector<plan::Request> fixture_requests(const scan::Inventory& inv)
{
    std::vector<plan::Request> out{test::vm_request()};
    out.push_back(test::vm_request());
    out.back().mapping = "gpu";
    out.push_back(test::vm_request());
    out.back().trial_minutes = plan::k_trial_default_minutes;
    std::vector<std::string> nics;
    for (const auto& [name, address] : inv.net_interfaces()) {
        nics.push_back(name);
    }
    if (nics.size() >= 2) {
        out.push_back(test::vm_request());
        out.back().network = plan::NetworkRequest{};
        out.back().network->bond_slaves = {nics[0], nics[1]};
        out.back().network->pin_nics = true;
    }
    return out;
}

// Every path a plan writes: its files, and the files its after-steps edit.
std::vector<std::string> written_by(const plan::Plan& p)
{
    std::vector<std::string> out;
    out.reserve(p.files.size());
    for (const auto& f : p.files) {
        out.push_back(f.path);
    }
    for (const auto& c : p.commands) {
        const auto edits = plan::after_step_effects(c.argv).edits;
        out.insert(out.end(), edits.begin(), edits.end());
    }
    return out;
}

} // namespace

TEST_SUITE("apply::manifest_check")
{
    TEST_CASE("a manifest passthru writes passes")
    {
        CHECK(check_manifest(good(), allowed_owners(0, 0)));
    }

    TEST_CASE("every path of plan/paths.hpp's table is accepted, and only files of a directory rule's shape")
    {
        for (const auto path : plan::written_files()) {
            CAPTURE(path);
            CHECK(is_passthru_path(std::string(path)));
        }
        for (const auto& loader : scan::boot_loaders()) {
            CAPTURE(loader.cmdline_file);
            CHECK((loader.cmdline_file.empty() || is_passthru_path(std::string(loader.cmdline_file))));
        }
        for (const auto path : {plan::k_grub_dropin, plan::k_modprobe_conf, plan::k_modules_load_conf, plan::k_trial_timer,
                                plan::k_trial_service, plan::k_trial_revert, plan::k_trial_dropin}) {
            CAPTURE(path);
            CHECK(is_passthru_path(std::string(path)));
        }
        for (const auto& d : plan::k_written_dirs) {
            const std::string name = std::string(d.prefix) + "x" + std::string(d.suffix);
            CAPTURE(d.dir);
            CHECK(is_passthru_path(d.file(name)));
            CHECK_FALSE(is_passthru_path(d.file(std::string(d.prefix) + std::string(d.suffix)))); // nothing between
            CHECK_FALSE(is_passthru_path(d.file("." + name)));
            CHECK_FALSE(is_passthru_path(d.file("sub/" + name)));
            CHECK_FALSE(is_passthru_path(d.file(name + "~")));
            CHECK_FALSE(is_passthru_path(std::string(d.dir)));
        }
        for (const char* path : {"/etc/default/grub.d/x.conf", "/etc/systemd/system/sshd.service", "/etc/modules-load.d/x",
                                 "/usr/local/lib/systemd/network/10-x.link", "/etc/grub.d/40_custom", "/etc/passthru/x.conf",
                                 "/etc/kernel/cmdline.d/x", "/etc/network/interfaces.d/x", "/etc/pve/mapping/usb.cfg"}) {
            CAPTURE(path);
            CHECK_FALSE(is_passthru_path(path));
        }
    }

    TEST_CASE("every path the plans of the fixture hosts write is accepted")
    {
        std::set<std::string> seen;
        for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(PASSTHRU_FIXTURES_DIR) / "hosts")) {
            const std::string host = entry.path().filename();
            CAPTURE(host);
            auto f = test::scan_fixture(host);
            REQUIRE(f);
            const data::DataDir data(f->fs, std::nullopt);
            for (const auto& request : fixture_requests(f->inventory)) {
                auto made = plan::make_plan(f->inventory, f->fs, data, request);
                auto confirm = plan::make_confirm_plan(f->inventory, f->fs, data, request);
                for (const auto* p : {made ? &*made : nullptr, confirm ? &*confirm : nullptr}) {
                    for (const auto& path : p == nullptr ? std::vector<std::string>{} : written_by(*p)) {
                        CAPTURE(path);
                        CHECK(is_passthru_path(path));
                        seen.insert(path);
                    }
                }
            }
        }
        // The plans reach every kind of file: the test covers what it claims.
        for (const auto path : {plan::k_modprobe_conf, plan::k_pci_mapping_file, plan::k_trial_grub_script, plan::k_trial_loader_entry,
                                plan::k_trial_dropin, plan::k_interfaces_new, std::string_view("/etc/kernel/cmdline")}) {
            CAPTURE(path);
            CHECK(seen.count(std::string(path)) == 1);
        }
        CHECK(std::any_of(seen.begin(), seen.end(), [](const std::string& p) { return plan::k_systemd_network_d.holds(p); }));
        CHECK(std::any_of(seen.begin(), seen.end(), [](const std::string& p) { return plan::k_qemu_server_d.holds(p); }));
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
