// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/kmod_ctx.hpp"

#include <libkmod.h>

#include <cstdarg>
#include <cstdlib>
#include <optional>
#include <string>

namespace passthru::scan {

namespace {

void drop_kmod_log(void* /*data*/, int /*priority*/, const char* /*file*/, int /*line*/, const char* /*fn*/, const char* /*format*/,
                   va_list /*args*/)
{}

} // namespace

kmod_ctx* new_quiet_kmod_ctx(const char* dirname, const char* const* config_paths)
{
    const char* env = std::getenv("KMOD_LOG");
    const std::optional<std::string> saved = env != nullptr ? std::optional<std::string>(env) : std::nullopt;
    ::setenv("KMOD_LOG", "0", 1);
    kmod_ctx* ctx = kmod_new(dirname, config_paths);
    if (saved) {
        ::setenv("KMOD_LOG", saved->c_str(), 1);
    } else {
        ::unsetenv("KMOD_LOG");
    }
    if (ctx != nullptr) {
        kmod_set_log_fn(ctx, drop_kmod_log, nullptr);
    }
    return ctx;
}

} // namespace passthru::scan
