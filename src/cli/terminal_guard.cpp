// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/terminal_guard.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>

#include "util/term.hpp"

namespace passthru::cli {
namespace {

struct Guard
{
    int fd;
    bool keep_color;
    std::string pending; // a colour sequence cut between two writes
    std::FILE* file = nullptr;
};

// The guarded streams, so that what a stream holds back is written at exit.
std::array<Guard*, 2> g_guards{};

bool write_fd(int fd, std::string_view text)
{
    while (!text.empty()) {
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        text.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

ssize_t guard_write(void* cookie, const char* data, std::size_t size)
{
    auto* guard = static_cast<Guard*>(cookie);
    // What stdout holds goes out before a diagnostic, so that a pipe or a
    // log (2>&1) reads in the order the lines were printed.
    if (guard->fd == STDERR_FILENO) {
        std::fflush(stdout);
    }
    guard->pending.append(data, size);
    const std::string_view all(guard->pending);
    const std::size_t hold = util::terminal_safe_pending(all);
    const bool ok = write_fd(guard->fd, util::terminal_safe(all.substr(0, all.size() - hold), guard->keep_color));
    guard->pending.erase(0, guard->pending.size() - hold);
    return ok ? static_cast<ssize_t>(size) : -1;
}

int guard_close(void* cookie)
{
    auto* guard = static_cast<Guard*>(cookie);
    const bool ok = write_fd(guard->fd, util::terminal_safe(guard->pending, guard->keep_color));
    guard->pending.clear();
    guard->file = nullptr; // the Guard lives on in g_guards until exit
    return ok ? 0 : -1;
}

// At exit: flush each guarded stream, then write what it held back.
void flush_guards()
{
    for (Guard* guard : g_guards) {
        if (guard != nullptr && guard->file != nullptr) {
            std::fflush(guard->file);
            write_fd(guard->fd, util::terminal_safe(guard->pending, guard->keep_color));
            guard->pending.clear();
        }
    }
}

} // namespace

void guard_stream(std::FILE*& stream, bool keep_color)
{
    for (Guard* guard : g_guards) {
        if (guard != nullptr && guard->file == stream) {
            std::fflush(stream);
            guard->keep_color = keep_color; // guarded already: the colour decided since
            return;
        }
    }
    const int fd = ::fileno(stream);
    std::fflush(stream);
    const bool tty = ::isatty(fd) == 1;
    auto* guard = new Guard{fd, keep_color, {}, nullptr};
    const cookie_io_functions_t io{nullptr, guard_write, nullptr, guard_close};
    std::FILE* guarded = ::fopencookie(guard, "w", io);
    if (guarded == nullptr) {
        delete guard;
        return; // out of memory: keep the plain stream rather than print nothing
    }
    // stderr unbuffered (a prompt must show before the answer is read),
    // stdout line-buffered on a terminal and fully buffered otherwise, as before.
    if (fd == STDERR_FILENO) {
        std::setvbuf(guarded, nullptr, _IONBF, 0);
    } else {
        std::setvbuf(guarded, nullptr, tty ? _IOLBF : _IOFBF, tty ? 0 : BUFSIZ);
    }
    guard->file = guarded;
    for (auto& slot : g_guards) {
        if (slot == nullptr) {
            slot = guard;
            break;
        }
    }
    static const bool registered = std::atexit(flush_guards) == 0;
    (void)registered;
    stream = guarded;
}

} // namespace passthru::cli
