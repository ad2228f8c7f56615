// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/libvirt_dl.hpp"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace passthru::scan::lv {

namespace {

Table g_table;

} // namespace

Result<void> load()
{
    static std::once_flag once;
    static std::string failure;
    std::call_once(once, [] {
        void* handle = ::dlopen("libvirt.so.0", RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) {
            const char* why = ::dlerror();
            failure = std::string("libvirt is not installed: ") + (why != nullptr ? why : "libvirt.so.0 not found");
            return;
        }
#define PASSTHRU_LIBVIRT_RESOLVE(name)                                                                                                     \
    g_table.name = reinterpret_cast<decltype(g_table.name)>(::dlsym(handle, #name));                                                       \
    if (g_table.name == nullptr && failure.empty()) {                                                                                      \
        failure = "libvirt.so.0 has no " #name;                                                                                            \
    }
        PASSTHRU_LIBVIRT_FUNCTIONS(PASSTHRU_LIBVIRT_RESOLVE)
#undef PASSTHRU_LIBVIRT_RESOLVE
    });
    if (!failure.empty()) {
        return tl::unexpected(
            Error(Errc::not_found, failure).with_hint("install libvirt0 (apt install libvirt0) to use --backend libvirt"));
    }
    return {};
}

const Table& table()
{
    return g_table;
}

} // namespace passthru::scan::lv
