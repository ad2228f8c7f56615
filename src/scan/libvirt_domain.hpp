// SPDX-License-Identifier: GPL-2.0-or-later
// Reading libvirt domains through the libvirt C API (libvirt-dev). libvirt
// never prints its errors: they are captured and returned as Error.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.hpp"

using virConnectPtr = struct _virConnect*;

namespace passthru::scan {

// One open connection per URI for the life of the process. The test
// driver (test:///default, test:///path/node.xml) keeps its state per
// connection, so plan and apply in one process must share it.
class LibvirtConnection
{
public:
    // The shared connection to uri, opened on first use. Errc::io when
    // libvirt cannot connect (message: libvirt's own, captured).
    static Result<LibvirtConnection*> shared(const std::string& uri);

    virConnectPtr get() const noexcept { return m_conn; }
    const std::string& uri() const noexcept { return m_uri; }

    LibvirtConnection(const LibvirtConnection&) = delete;
    LibvirtConnection& operator=(const LibvirtConnection&) = delete;
    ~LibvirtConnection();

private:
    LibvirtConnection(virConnectPtr conn, std::string uri) : m_conn(conn), m_uri(std::move(uri)) {}
    virConnectPtr m_conn = nullptr;
    std::string m_uri;
};

// True for a URI of libvirt's test driver without a host ("test:///default",
// "test:///PATH/node.xml"): served inside this process from memory or from
// that file, with no daemon, socket or network. Under --root these are the
// only URIs passthru opens (the man page: nothing outside the root is touched).
bool is_in_process_uri(std::string_view uri);

// Installs a libvirt error handler that records instead of printing (once
// per process; safe to call often).
void silence_libvirt_errors();
// libvirt's last error of this thread as text ("unknown error" when none),
// and resets it.
std::string libvirt_last_error();

struct DomainXml
{
    std::string xml; // VIR_DOMAIN_XML_INACTIVE: the persistent definition
    bool active = false;
    bool persistent = true;
};

// The persistent definition of a domain by name; nullopt when no such
// domain exists. Errc::io on connection or API failures.
Result<std::optional<DomainXml>> read_domain_xml(const std::string& uri, const std::string& name);

} // namespace passthru::scan
