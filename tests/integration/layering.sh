#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The layering check (scripts/check-layering.py) passes on the tree, and fails
# on a copy of src/ with one planted violation at a time: an include pointing
# up (data/ including anything but util/ among them), a plan room including another room, a host path opened outside HostFs,
# a program run outside CommandRunner, a std::regex, and plan reading
# something live (getenv, a /proc path, HostFs::is_live()), plan, scan or explain
# reading a data file itself instead of through src/data/; and that a listed
# exception (EXCEPTIONS in the script) is allowed in its own file only.
source "$(dirname "$0")/lib.inc"
check=$SRC/scripts/check-layering.py

python3 "$check" "$SRC/src"

# Every rule is one file's: the tree passes as a whole above, so a tree holding only a copy
# of FILE (at its own path) with LINE appended fails exactly for LINE, and each planted run
# reads one file instead of all of src/.
planted() {  # planted FILE LINE: runs the check on a tree of FILE with LINE appended; sets rc, output in $T/out
    rm -rf "$T/one"
    mkdir -p "$T/one/$(dirname "$1")"
    cp "$SRC/src/$1" "$T/one/$1"
    echo "$2" >> "$T/one/$1"
    rc=0
    python3 "$check" "$T/one" > "$T/out" 2>&1 || rc=$?
}

plant() {  # plant NAME FILE LINE: a copy of src/ with LINE appended to FILE must fail, naming FILE
    planted "$2" "$3"
    [[ $rc -eq 1 ]] || { cat "$T/out"; fail "$1: check exited $rc on a planted violation"; return; }
    grep -q "^layering: $2:" "$T/out" || { cat "$T/out"; fail "$1: $2 not named"; return; }
    ok "$1 caught"
}
plant "include upward" scan/inventory.cpp '#include "plan/plan.hpp"'
plant "data includes format" data/schema.cpp '#include "format/grammar.hpp"'
plant "data includes scan" data/schema.hpp '#include "scan/inventory.hpp"'
plant "room into room" plan/network/routes.cpp '#include "plan/vm/profile.hpp"'
plant "fopen outside HostFs" scan/inventory.cpp 'static FILE* f = fopen("/etc/hostname", "r");'
plant "std::filesystem outside HostFs" apply/verify.cpp 'static bool e = std::filesystem::exists("/etc");'
plant "program run outside CommandRunner" cli/help.cpp 'static int r = std::system("true");'
plant "popen outside CommandRunner" plan/vm/proxmox.cpp 'static FILE* p = popen("lspci -n", "r");'
plant "opendir outside HostFs" scan/inventory.cpp 'static DIR* d = opendir("/sys/bus/pci/devices");'
plant "::open outside HostFs" format/interfaces.cpp 'static int fd = ::open("/etc/network/interfaces", O_RDONLY);'
plant "std::ifstream outside HostFs" apply/verify.cpp 'static std::ifstream in("/etc/hostname");'
plant "std::ofstream outside HostFs" cli/help.cpp 'static std::ofstream out("/etc/modprobe.d/x.conf");'
plant "raw syscall outside HostFs" scan/inventory.cpp 'static long r = syscall(SYS_openat, AT_FDCWD, "/etc/hostname", 0);'
plant "statvfs outside HostFs" apply/verify.cpp 'static int s = statvfs("/boot", nullptr);'
plant "chdir outside HostFs" cli/help.cpp 'static int c = chdir("/etc");'
plant "std::filesystem under an alias" apply/verify.cpp 'namespace sfs = std::filesystem; static bool e2 = sfs::exists("/etc");'
plant "using namespace std::filesystem" scan/inventory.cpp 'using namespace std::filesystem; static bool e3 = exists("/etc");'
plant "libkmod outside its rooms" format/interfaces.cpp 'static kmod_ctx* k = kmod_new("/lib/modules", nullptr);'
plant "libxml2 file reader" plan/vm/libvirt_xml.cpp 'static xmlDocPtr d = xmlReadFile("/etc/libvirt/qemu/x.xml", nullptr, 0);'
plant "std::regex include" format/interfaces.cpp '#include <regex>'
plant "std::regex use" scan/inventory.cpp 'static bool b = std::regex_match(std::string("x"), std::regex("x"));'
# plan reads nothing live: no environment, no /proc path, no HostFs::is_live() under src/plan.
plant "getenv in plan" plan/network/plan.cpp 'static const char* ssh = std::getenv("SSH_CONNECTION");'
plant "secure_getenv in plan" plan/vm/proxmox.cpp 'static const char* e = secure_getenv("KMOD_LOG");'
plant "/proc path in plan" plan/network/routes.cpp 'static const char* route = "/proc/net/route";'
plant "/proc/PID path in plan" plan/vm/proxmox.cpp 'static std::string cmdline(int pid) { return "/proc/" + std::to_string(pid) + "/cmdline"; }'
# Data files are read in src/data/ only.
plant "a data file read in plan" plan/vm/proxmox.cpp 'static auto t(const data::DataDir& d) { return d.read("profiles", "host/x.json"); }'
plant "load_profile in scan" scan/inventory.cpp 'static auto l(const data::DataDir& d) { return d.load_profile("host/x.json", nullptr); }'
plant "a VM profile read in plan/vm/profile.cpp" plan/vm/profile.cpp 'static auto v(const data::DataDir& d) { return d.read("profiles", "vm/x.json"); }'
plant "a profile listed in plan" plan/vm/backends.cpp 'static auto n(const data::DataDir& d) { return d.list("profiles", "vm"); }'
plant "failures.json read in explain" explain/signature.cpp 'static auto f(const data::DataDir& d) { return d.read("profiles", "failures.json"); }'
plant "load_profile in explain" explain/explain.cpp 'static auto l(const data::DataDir& d) { return d.load_profile("failures.json", nullptr); }'
plant "is_live in plan" plan/vm/libvirt.cpp 'static bool live(const util::HostFs& fs) { return fs.is_live(); }'

allow() {  # allow NAME FILE LINE: LINE appended to FILE is a listed exception there: the check passes
    planted "$2" "$3"
    [[ $rc -eq 0 ]] || { cat "$T/out"; fail "$1: a listed exception was refused"; return; }
    ok "$1 allowed"
}
allow "shipped data read in data/data_dir.cpp" data/data_dir.cpp 'static std::ifstream shipped("/usr/share/passthru/profiles/x.json");'
allow "a data file read in the data room" data/vm_profile.cpp 'static auto v(const DataDir& d) { return d.read("profiles", "vm/x.json"); }'
allow "a template read in plan" plan/templates.cpp 'static auto t(const data::DataDir& d) { return d.read("templates", "x.mustache"); }'
allow "libkmod in scan/" scan/inventory.cpp 'static kmod_ctx* k = kmod_new("/lib/modules", nullptr);'
allow "a comment naming /proc and getenv in plan" plan/network/routes.cpp '// read from /proc/net/route by scan, never getenv("X") here'
allow "a message naming a /proc file in plan" plan/trial.cpp 'static const char* why = "/proc/cmdline cannot be read";'
allow "getenv and /proc paths in scan and cli" scan/inventory.cpp 'static const char* e = std::getenv("X"); static const char* p = "/proc/net/route";'
