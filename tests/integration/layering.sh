#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The layering check (scripts/check-layering.py) passes on the tree, and fails
# on a copy of src/ with one planted violation at a time: an include pointing
# up (data/ including anything but util/ among them), a plan room including another room, a host path opened outside HostFs,
# a program run outside CommandRunner, a std::regex, and plan reading
# something live (getenv, a /proc path, HostFs::is_live()); and that a listed
# exception (EXCEPTIONS in the script) is allowed in its own file only. The rule
# that only src/data/ reads a data file is planted by layering_data.sh (quick).
source "$(dirname "$0")/lib.inc"
source "$(dirname "$0")/layering.inc"

python3 "$check" "$SRC/src"

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
plant "is_live in plan" plan/vm/libvirt.cpp 'static bool live(const util::HostFs& fs) { return fs.is_live(); }'

allow "shipped data read in data/data_dir.cpp" data/data_dir.cpp 'static std::ifstream shipped("/usr/share/passthru/profiles/x.json");'
allow "libkmod in scan/" scan/inventory.cpp 'static kmod_ctx* k = kmod_new("/lib/modules", nullptr);'
allow "a comment naming /proc and getenv in plan" plan/network/routes.cpp '// read from /proc/net/route by scan, never getenv("X") here'
allow "a message naming a /proc file in plan" plan/trial.cpp 'static const char* why = "/proc/cmdline cannot be read";'
allow "getenv and /proc paths in scan and cli" scan/inventory.cpp 'static const char* e = std::getenv("X"); static const char* p = "/proc/net/route";'
