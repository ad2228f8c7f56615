// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "../support/temp_dir.hpp"
#include "util/host_fs.hpp"

using passthru::test::TempDir;
using namespace passthru::util;

namespace {

// Entries of a directory of this machine, "" when it is empty.
std::string entries_of(const std::filesystem::path& dir)
{
    std::string out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        out += e.path().filename().string() + " ";
    }
    return out;
}

// In a child process whose seccomp filter makes openat2(2) fail with ENOSYS
// (a kernel before 5.6): the exit code of HostFs::open(root), 0 when it
// succeeds, 10 + the error code's number when it fails closed, 99 on a
// set-up failure.
int open_without_openat2(const std::filesystem::path& root)
{
    const pid_t pid = ::fork();
    if (pid == 0) {
        sock_filter filter[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
            ::_exit(99);
        }
        auto fs = HostFs::open(root);
        ::_exit(fs ? 0 : 10 + static_cast<int>(fs.error().code()));
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

} // namespace

TEST_SUITE("util::host_fs")
{
    TEST_CASE("a missing root is refused")
    {
        auto fs = HostFs::open("/nonexistent/passthru-root");
        REQUIRE_FALSE(fs);
        CHECK(fs.error().code() == passthru::Errc::not_found);
    }

    TEST_CASE("absolute and relative symlinks stay inside the root")
    {
        TempDir root;
        root.write("etc/real", "inside\n");
        root.symlink("etc/abs", "/etc/real");
        root.symlink("etc/up", "../../../../../../etc/real");
        root.symlink("etc/escape", "/etc/passwd");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        CHECK(fs->read_file("/etc/abs").value() == "inside\n");
        CHECK(fs->read_file("/etc/up").value() == "inside\n");
        // /etc/passwd of this machine must never be read: it resolves to <root>/etc/passwd.
        CHECK_FALSE(fs->read_file("/etc/escape"));
        CHECK(fs->resolve("/etc/../../../etc/real").value() == "/etc/real");
    }

    TEST_CASE("a file larger than HostFs reads is refused, never cut short")
    {
        TempDir root;
        root.write("etc/small", "x");
        root.write("etc/large", "GRUB_CMDLINE_LINUX=\"\"\n");
        // sparse: no memory or disk, and refused before a byte is read
        std::filesystem::resize_file(root.path() / "etc/large", HostFs::k_max_file_bytes + 1);
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        const auto large = fs->read_file("/etc/large");
        REQUIRE_FALSE(large);
        CHECK(large.error().code() == passthru::Errc::precondition);
        CHECK(std::string(large.error().what()) == "refused: /etc/large is larger than 256 MiB, more than passthru reads of a file");
        CHECK_FALSE(fs->read_attr("/etc/large"));
        CHECK(fs->read_file("/etc/small").value() == "x");
    }

    TEST_CASE("symlink loops fail instead of hanging")
    {
        TempDir root;
        root.symlink("a", "b");
        root.symlink("b", "a");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        CHECK_FALSE(fs->read_file("/a"));
    }

    TEST_CASE("atomic write keeps the mode of the replaced file and refuses symlinks")
    {
        TempDir root;
        root.write("etc/kernel/cmdline", "root=ZFS=rpool/ROOT/pve-1 boot=zfs\n");
        ::chmod((root.path() / "etc/kernel/cmdline").c_str(), 0600);
        root.symlink("etc/link", "/etc/kernel/cmdline");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        REQUIRE(fs->write_file_atomic("/etc/kernel/cmdline", "new\n", 0644, FsSync::yes));
        CHECK(root.read("etc/kernel/cmdline") == "new\n");
        CHECK(fs->stat("/etc/kernel/cmdline").mode == 0600);
        auto refused = fs->write_file_atomic("/etc/link", "x\n", 0644, FsSync::yes);
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code() == passthru::Errc::precondition);
        CHECK(root.read("etc/kernel/cmdline") == "new\n");
    }

    TEST_CASE("new files get the requested mode; directories are created inside the root")
    {
        TempDir root;
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        REQUIRE(fs->create_directories("/etc/modprobe.d"));
        REQUIRE(fs->write_file_atomic("/etc/modprobe.d/x.conf", "options kvm ignore_msrs=1\n", 0644, FsSync::no));
        CHECK(fs->stat("/etc/modprobe.d/x.conf").mode == 0644);
        CHECK(fs->stat("/etc/modprobe.d/x.conf").type == FileType::regular);
        REQUIRE(fs->remove_file("/etc/modprobe.d/x.conf"));
        CHECK(fs->stat("/etc/modprobe.d/x.conf").type == FileType::missing);
    }

    TEST_CASE("HostDir reads attributes and links by name")
    {
        TempDir root;
        root.write("sys/devices/pci0000:00/0000:00:01.0/vendor", "0x10de\n");
        root.symlink("sys/devices/pci0000:00/0000:00:01.0/driver", "../../../bus/pci/drivers/nouveau");
        root.symlink("sys/bus/pci/devices/0000:00:01.0", "../../../devices/pci0000:00/0000:00:01.0");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        auto dir = fs->open_dir("/sys/bus/pci/devices/0000:00:01.0");
        REQUIRE(dir);
        CHECK(dir->path() == "/sys/devices/pci0000:00/0000:00:01.0");
        CHECK(dir->attr("vendor").value() == "0x10de");
        CHECK(dir->link("driver").value() == "../../../bus/pci/drivers/nouveau");
        CHECK_FALSE(dir->attr("driver"));
        CHECK_FALSE(dir->attr("missing"));
    }

    TEST_CASE("HostDir reads relative paths below itself and never through a symlink")
    {
        TempDir root;
        root.write("sys/kernel/iommu_groups/12/type", "DMA\n");
        root.write("sys/kernel/iommu_groups/12/devices/0000:01:00.0", "");
        root.write("outside/secret", "no\n");
        root.write("sys/devices/pci0000:00/0000:00:01.0/vendor", "0x10de\n");
        root.symlink("sys/kernel/iommu_groups/13", "../../outside");
        root.symlink("sys/kernel/iommu_groups/14", "12");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        auto top = fs->open_dir("/sys/kernel/iommu_groups");
        REQUIRE(top);
        CHECK(top->attr("12/type").value() == "DMA");
        CHECK(top->list("12/devices") == std::vector<std::string>{"0000:01:00.0"});
        CHECK_FALSE(top->attr("13/secret")); // a symlink on the way is not followed
        CHECK_FALSE(top->attr("14/type"));   // not even one that stays inside
        CHECK_FALSE(top->attr("../../../outside/secret"));
        CHECK_FALSE(top->attr("12/../13/secret"));
        CHECK(top->list("13").empty());
        auto sys = fs->open_dir("/sys/devices");
        REQUIRE(sys);
        auto dev = sys->subdir("pci0000:00/0000:00:01.0");
        REQUIRE(dev);
        CHECK(dev->path() == "/sys/devices/pci0000:00/0000:00:01.0");
        CHECK(dev->attr("vendor").value() == "0x10de");
        CHECK_FALSE(top->subdir("13"));
        CHECK_FALSE(top->subdir("../iommu_groups"));
        CHECK_FALSE(top->subdir("/12"));
    }

    TEST_CASE("paths through '..' resolve while renames race elsewhere on the system")
    {
        // The kernel answers EAGAIN to an openat2 with RESOLVE_IN_ROOT whose ".." resolution
        // a rename anywhere raced; sysfs links are all "../..", so a scan under load lost devices.
        TempDir root;
        root.write("sys/devices/pci0000:00/0000:00:01.0/vendor", "0x10de\n");
        root.symlink("sys/bus/pci/devices/0000:00:01.0", "../../../devices/pci0000:00/0000:00:01.0");
        TempDir scratch;
        scratch.write("a", "x");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        std::atomic<bool> stop{false};
        std::thread renamer([&] {
            const std::string a = (scratch.path() / "a").string();
            const std::string b = (scratch.path() / "b").string();
            while (!stop.load()) {
                std::rename(a.c_str(), b.c_str());
                std::rename(b.c_str(), a.c_str());
            }
        });
        int failures = 0;
        for (int i = 0; i < 20000; ++i) {
            auto dir = fs->open_dir("/sys/bus/pci/devices/0000:00:01.0");
            if (!dir || !dir->attr("vendor")) {
                ++failures;
            }
        }
        stop = true;
        renamer.join();
        CHECK(failures == 0);
    }

    TEST_CASE("without openat2 the root is refused instead of resolved in user space")
    {
        TempDir root;
        root.write("etc/hostname", "pve\n");
        CHECK(open_without_openat2(root.path()) == 10 + static_cast<int>(passthru::Errc::precondition));
        CHECK(open_without_openat2("/") == 10 + static_cast<int>(passthru::Errc::precondition));
        CHECK(HostFs::open(root.path()));
    }

    TEST_CASE("symlinked directories are followed inside the root for every write")
    {
        TempDir root;
        TempDir outside;
        outside.write("victim/passthru-vfio.conf", "outside\n");
        const std::string victim = (outside.path() / "victim").string();
        root.write("etc/hostname", "pve\n");
        root.symlink("etc/modprobe.d", victim);                     // absolute: re-anchored at the root
        root.symlink("etc/up", "../../../../../../../.." + victim); // ".." stops at the root
        root.symlink("etc/dangling", "/nonexistent/dir");
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        REQUIRE(fs->create_directories("/etc/modprobe.d"));
        CHECK(std::filesystem::is_directory(root.path() / victim.substr(1)));
        REQUIRE(fs->write_file_atomic("/etc/modprobe.d/passthru-vfio.conf", "options vfio-pci ids=10de:1e07\n", 0644, FsSync::yes));
        CHECK(root.read(victim.substr(1) + "/passthru-vfio.conf") == "options vfio-pci ids=10de:1e07\n");
        CHECK(fs->read_file("/etc/up/passthru-vfio.conf").value() == "options vfio-pci ids=10de:1e07\n");
        CHECK(fs->stat("/etc/up/passthru-vfio.conf").type == FileType::regular);
        CHECK(fs->read_link("/etc/up").value() == "../../../../../../../.." + victim);
        CHECK(fs->list_dir("/etc/up").value() == std::vector<std::string>{"passthru-vfio.conf"});
        REQUIRE(fs->remove_file("/etc/up/passthru-vfio.conf"));
        CHECK(fs->stat("/etc/modprobe.d/passthru-vfio.conf").type == FileType::missing);
        CHECK_FALSE(fs->remove_directory("/etc/modprobe.d")); // the link itself is not followed: rmdir fails
        CHECK(std::filesystem::is_directory(root.path() / victim.substr(1)));
        // dangling links: nothing to read, nothing created through them outside
        CHECK(fs->read_file("/etc/dangling/x").error().code() == passthru::Errc::not_found);
        CHECK_FALSE(fs->exists("/etc/dangling"));
        CHECK(fs->stat("/etc/dangling").type == FileType::symlink);
        CHECK_FALSE(fs->write_file_atomic("/etc/dangling/x.conf", "x\n", 0644, FsSync::no));
        CHECK_FALSE(std::filesystem::exists("/nonexistent/dir"));
        CHECK(outside.read("victim/passthru-vfio.conf") == "outside\n");
        CHECK(entries_of(outside.path() / "victim") == "passthru-vfio.conf ");
    }

    TEST_CASE("an atomic replace leaves no temporary file and keeps a replaced file's owner and mode")
    {
        if (::geteuid() != 0) {
            MESSAGE("skipped: giving a file to group 33 (chown) needs root");
            return;
        }
        TempDir root;
        root.write("etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n");
        ::chmod((root.path() / "etc/default/grub").c_str(), 0640);
        REQUIRE(::chown((root.path() / "etc/default/grub").c_str(), 0, 33) == 0);
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        for (int i = 0; i < 50; ++i) {
            // appended, not `"v" + std::to_string(i) + "\n"`: GCC 12 at -O3 takes that for an
            // overflowing copy (-Wstringop-overflow, a false positive of its string inlining)
            std::string text("v");
            text.append(std::to_string(i)).append("\n");
            REQUIRE(fs->write_file_atomic("/etc/default/grub", text, 0600, FsSync::no));
            REQUIRE(fs->write_file_atomic("/etc/default/new.cfg", "n\n", 0600, FsSync::no));
            REQUIRE(fs->remove_file("/etc/default/new.cfg"));
        }
        CHECK(entries_of(root.path() / "etc/default") == "grub ");
        CHECK(root.read("etc/default/grub") == "v49\n");
        CHECK(fs->stat("/etc/default/grub").mode == 0640);
        CHECK(fs->stat("/etc/default/grub").gid == 33);
        // a file planted under a temporary name's pattern is never followed nor reused
        REQUIRE(fs->create_directories("/etc/default/../kernel/./cmdline.d"));
        CHECK(std::filesystem::is_directory(root.path() / "etc/kernel/cmdline.d"));
    }

    TEST_CASE("an exact owner and mode are set whatever the file had; new directories are 0755 under any umask")
    {
        if (::geteuid() != 0) {
            MESSAGE("skipped: setting owner 0 and group 33 needs root");
            return;
        }
        TempDir root;
        root.write("etc/pve/qemu-server/101.conf", "cores: 4\n");
        ::chmod((root.path() / "etc/pve/qemu-server/101.conf").c_str(), 0600);
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        const mode_t old_umask = ::umask(077);
        const FileOwnership pve{0640, 0, 33};
        REQUIRE(fs->write_file_atomic("/etc/pve/qemu-server/101.conf", "cores: 8\n", 0600, FsSync::no, pve));
        REQUIRE(fs->write_file_atomic("/etc/pve/qemu-server/102.conf", "cores: 2\n", 0600, FsSync::no, pve));
        REQUIRE(fs->create_directories("/etc/modprobe.d/a/b"));
        ::umask(old_umask);
        for (const char* path : {"/etc/pve/qemu-server/101.conf", "/etc/pve/qemu-server/102.conf"}) {
            CAPTURE(path);
            CHECK(fs->stat(path).mode == 0640);
            CHECK(fs->stat(path).uid == 0);
            CHECK(fs->stat(path).gid == 33);
        }
        for (const char* dir : {"/etc/modprobe.d", "/etc/modprobe.d/a", "/etc/modprobe.d/a/b"}) {
            CAPTURE(dir);
            CHECK(fs->stat(dir).mode == 0755);
        }
    }

    TEST_CASE("a directory swapped for a symlink during writes never leads one outside the root")
    {
        // The owner of the tree exchanges etc/modprobe.d with a symlink to a
        // directory outside the root (renameat2 RENAME_EXCHANGE) in a loop,
        // while files are written into it and removed from it. Resolving in
        // user space and then writing by path name wrote files outside and
        // unlinked the victim there within a few hundred rounds.
        TempDir root;
        TempDir outside;
        outside.write("victim/passthru-vfio.conf", "outside\n");
        const std::string victim = (outside.path() / "victim").string();
        root.write("etc/modprobe.d/pve-blacklist.conf", "blacklist nvidiafb\n");
        root.symlink("etc/swap", victim);
        auto fs = HostFs::open(root.path());
        REQUIRE(fs);
        std::atomic<bool> stop{false};
        std::thread swapper([&] {
            const std::string etc = (root.path() / "etc").string();
            const int dfd = ::open(etc.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
            while (!stop.load()) {
                ::syscall(SYS_renameat2, dfd, "modprobe.d", dfd, "swap", RENAME_EXCHANGE);
            }
            ::close(dfd);
        });
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
        int rounds = 0;
        for (; rounds < 4000 && std::chrono::steady_clock::now() < until; ++rounds) {
            (void)fs->create_directories("/etc/modprobe.d");
            (void)fs->write_file_atomic("/etc/modprobe.d/passthru-vfio.conf", "options vfio-pci ids=10de:1e07\n", 0644, FsSync::no);
            (void)fs->read_file("/etc/modprobe.d/passthru-vfio.conf");
            (void)fs->remove_file("/etc/modprobe.d/passthru-vfio.conf");
            (void)fs->try_lock("/etc/modprobe.d/lock", LockCreate::yes);
            (void)fs->remove_file("/etc/modprobe.d/lock");
        }
        stop = true;
        swapper.join();
        MESSAGE(rounds << " rounds");
        CHECK(entries_of(outside.path() / "victim") == "passthru-vfio.conf ");
        CHECK(outside.read("victim/passthru-vfio.conf") == "outside\n");
        CHECK(entries_of(outside.path()) == "victim ");
    }

    TEST_CASE("save_local_file replaces only a regular file")
    {
        TempDir dir;
        const auto at = [&dir](const char* name) { return dir.path() / name; };
        dir.write("old.json", "old\n");
        REQUIRE(save_local_file(at("old.json"), "new\n", 0600));
        CHECK(dir.read("old.json") == "new\n");
        REQUIRE(save_local_file(at("fresh.json"), "fresh\n", 0600));
        CHECK(dir.read("fresh.json") == "fresh\n");

        // A FIFO, a symlink and a dangling symlink stay what they are.
        REQUIRE(::mkfifo(at("fifo").c_str(), 0600) == 0);
        dir.symlink("link", "old.json");
        dir.symlink("dangling", "nowhere");
        const std::string before = entries_of(dir.path());
        for (const char* name : {"fifo", "link", "dangling"}) {
            CAPTURE(name);
            auto refused = save_local_file(at(name), "plan\n", 0600);
            REQUIRE_FALSE(refused);
            CHECK(refused.error().code() == passthru::Errc::precondition);
            CHECK(std::string(refused.error().what()).find("not a regular file") != std::string::npos);
        }
        CHECK(entries_of(dir.path()) == before); // no temporary file left beside them
        CHECK(std::filesystem::is_fifo(std::filesystem::symlink_status(at("fifo"))));
        CHECK(std::filesystem::is_symlink(std::filesystem::symlink_status(at("link"))));
        CHECK(std::filesystem::is_symlink(std::filesystem::symlink_status(at("dangling"))));
        CHECK(dir.read("old.json") == "new\n");
        CHECK_FALSE(std::filesystem::exists(at("nowhere")));
    }

    TEST_CASE("join_host_path works like the kernel's relative links")
    {
        CHECK(join_host_path("/sys/devices/pci0000:00/0000:00:01.0", "../../../bus/pci/drivers/x") == "/sys/bus/pci/drivers/x");
        CHECK(join_host_path("/a", "../../../b") == "/b");
        CHECK(join_host_path("/a/b", "/c") == "/c");
        CHECK(base_name("/sys/kernel/iommu_groups/12") == "12");
        CHECK(dir_name("/etc/kernel/cmdline") == "/etc/kernel");
    }
}

TEST_SUITE("util::host_fs")
{
    TEST_CASE("read_records reads a record device to its end without waiting for more")
    {
        // A FIFO with a writer that stays open stands in for /dev/kmsg: a
        // blocking read would wait for ever after the last record; read_records
        // stops at EAGAIN with what was there.
        const TempDir dir;
        const auto fifo = dir.path() / "kmsg";
        REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
        const int writer = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC); // O_RDWR: opening does not wait for a reader
        REQUIRE(writer >= 0);
        const std::string records = "6,1,100,-;first record\n4,2,200,-;second record\n";
        REQUIRE(::write(writer, records.data(), records.size()) == static_cast<ssize_t>(records.size()));
        const auto fs = HostFs::open(dir.path()).value();
        const auto start = std::chrono::steady_clock::now();
        const auto text = fs.read_records("/kmsg", 1 << 20);
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
        ::close(writer);
        REQUIRE(text);
        CHECK(*text == records);
        CHECK(fs.read_records("/kmsg-missing", 10).error().code() != passthru::Errc::internal);
    }
}
