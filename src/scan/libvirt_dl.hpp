// SPDX-License-Identifier: GPL-2.0-or-later
// libvirt loaded at run time. libvirt.so.0 brings some fifty libraries
// (glib, gnutls, curl, krb5, ...) whose loading would cost every passthru
// command — scan above all — time and memory, while only the libvirt
// backend needs it. The prototypes come from libvirt's own headers; the
// library is dlopen(3)ed on first use.
#pragma once

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include <utility>

#include "util/error.hpp"

namespace passthru::scan::lv {

#define PASSTHRU_LIBVIRT_FUNCTIONS(X)                                                                                                      \
    X(virInitialize)                                                                                                                       \
    X(virSetErrorFunc)                                                                                                                     \
    X(virConnSetErrorFunc)                                                                                                                 \
    X(virConnectOpen)                                                                                                                      \
    X(virConnectClose)                                                                                                                     \
    X(virDomainLookupByName)                                                                                                               \
    X(virDomainGetXMLDesc)                                                                                                                 \
    X(virDomainDefineXML)                                                                                                                  \
    X(virDomainUndefine)                                                                                                                   \
    X(virDomainFree)                                                                                                                       \
    X(virDomainIsActive)                                                                                                                   \
    X(virDomainIsPersistent)                                                                                                               \
    X(virGetLastError)                                                                                                                     \
    X(virResetLastError)

struct Table
{
#define PASSTHRU_LIBVIRT_MEMBER(name) decltype(&::name) name = nullptr; // NOLINT(bugprone-macro-parentheses): a name, not an expression
    PASSTHRU_LIBVIRT_FUNCTIONS(PASSTHRU_LIBVIRT_MEMBER)
#undef PASSTHRU_LIBVIRT_MEMBER
};

// Loads libvirt.so.0 once. Fails with Errc::not_found (and what to install)
// when the library or one of its functions is missing.
Result<void> load();
// The loaded functions; only valid after load() succeeded.
const Table& table();

// Forwarders with libvirt's names: lv::virConnectOpen(...).
#define PASSTHRU_LIBVIRT_FORWARD(name)                                                                                                     \
    template<typename... Args>                                                                                                             \
    inline auto name(Args&&... args)                                                                                                       \
    {                                                                                                                                      \
        return table().name(std::forward<Args>(args)...);                                                                                  \
    }
PASSTHRU_LIBVIRT_FUNCTIONS(PASSTHRU_LIBVIRT_FORWARD)
#undef PASSTHRU_LIBVIRT_FORWARD

} // namespace passthru::scan::lv
