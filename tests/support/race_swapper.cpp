// SPDX-License-Identifier: GPL-2.0-or-later
// race-swapper A B COUNT_FILE: exchanges the directory entries A and B
// (renameat2 RENAME_EXCHANGE) in a tight loop until SIGTERM, then writes the
// number of exchanges that took place to COUNT_FILE. The race test
// (tests/integration/race_root.sh) runs it against passthru: the owner of a
// tree under --root swapping a directory for a symlink that leads out of it.
// A loop of system calls is needed to win the race at all: an interpreter's
// loop exchanged too slowly to ever catch a path-based write in its window.
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

volatile std::sig_atomic_t g_stop = 0;

void on_term(int /*signal*/)
{
    g_stop = 1;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 4) {
        std::fputs("usage: race-swapper A B COUNT_FILE\n", stderr);
        return 2;
    }
    struct sigaction action = {};
    action.sa_handler = on_term;
    if (sigaction(SIGTERM, &action, nullptr) != 0) {
        return 1;
    }
    unsigned long exchanges = 0;
    while (g_stop == 0) {
        if (syscall(SYS_renameat2, AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) == 0) {
            ++exchanges;
        }
    }
    std::FILE* out = std::fopen(argv[3], "we");
    if (out == nullptr) {
        return 1;
    }
    std::fprintf(out, "%lu\n", exchanges);
    return std::fclose(out) == 0 ? 0 : 1;
}
