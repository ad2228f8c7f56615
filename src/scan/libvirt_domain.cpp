// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/libvirt_domain.hpp"

#include "scan/libvirt_dl.hpp"
#include <libxml/xmlerror.h>

#include <cstdlib>
#include <map>
#include <mutex>

namespace passthru::scan {

namespace {

// libvirt calls this instead of printing to stderr; the error stays
// retrievable with virGetLastError().
void ignore_error(void* /*user_data*/, virErrorPtr /*error*/) {}

// libvirt parses XML (test driver node files, domain definitions) with
// libxml2, whose default handler prints "I/O warning: ..." to stderr. The
// failure still reaches us through virGetLastError().
void ignore_xml_error(void* /*ctx*/, const char* /*fmt*/, ...) {}

std::mutex& registry_mutex()
{
    static std::mutex m;
    return m;
}

std::map<std::string, std::unique_ptr<LibvirtConnection>>& registry()
{
    static std::map<std::string, std::unique_ptr<LibvirtConnection>> connections;
    return connections;
}

} // namespace

void silence_libvirt_errors()
{
    if (!lv::load()) {
        return; // nothing of libvirt's to silence
    }
    static std::once_flag once;
    std::call_once(once, [] {
        lv::virInitialize();
        lv::virSetErrorFunc(nullptr, ignore_error);
    });
    // libxml2 keeps its handler per thread: set it on every call.
    xmlSetGenericErrorFunc(nullptr, ignore_xml_error);
}

std::string libvirt_last_error()
{
    virErrorPtr err = lv::virGetLastError();
    std::string message = (err != nullptr && err->message != nullptr) ? err->message : "unknown libvirt error";
    lv::virResetLastError();
    return message;
}

LibvirtConnection::~LibvirtConnection()
{
    if (m_conn != nullptr) {
        lv::virConnectClose(m_conn);
    }
}

bool is_in_process_uri(std::string_view uri)
{
    // "test://HOST/..." goes through the remote driver to HOST; "test:///..." does not.
    return uri.starts_with("test:///") && uri.find_first_of("?#") == std::string_view::npos;
}

Result<LibvirtConnection*> LibvirtConnection::shared(const std::string& uri)
{
    if (auto loaded = lv::load(); !loaded) {
        return tl::unexpected(loaded.error());
    }
    silence_libvirt_errors();
    std::lock_guard lock(registry_mutex());
    auto& connections = registry();
    if (auto it = connections.find(uri); it != connections.end()) {
        return it->second.get();
    }
    virConnectPtr conn = lv::virConnectOpen(uri.c_str());
    if (conn == nullptr) {
        return fail(Errc::io, "cannot connect to libvirt at " + uri + ": " + libvirt_last_error());
    }
    // Connection-level errors go to the same silent handler.
    lv::virConnSetErrorFunc(conn, nullptr, ignore_error);
    auto [it, inserted] = connections.emplace(uri, std::unique_ptr<LibvirtConnection>(new LibvirtConnection(conn, uri)));
    return it->second.get();
}

Result<std::optional<DomainXml>> read_domain_xml(const std::string& uri, const std::string& name)
{
    auto conn = LibvirtConnection::shared(uri);
    if (!conn) {
        return tl::unexpected(conn.error());
    }
    virDomainPtr dom = lv::virDomainLookupByName((*conn)->get(), name.c_str());
    if (dom == nullptr) {
        virErrorPtr err = lv::virGetLastError();
        if (err != nullptr && err->code == VIR_ERR_NO_DOMAIN) {
            lv::virResetLastError();
            return std::optional<DomainXml>();
        }
        return fail(Errc::io, "cannot look up libvirt domain '" + name + "' on " + uri + ": " + libvirt_last_error());
    }
    DomainXml out;
    char* xml = lv::virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE);
    if (xml == nullptr) {
        std::string message = libvirt_last_error();
        lv::virDomainFree(dom);
        return fail(Errc::io, "cannot read the definition of libvirt domain '" + name + "': " + message);
    }
    out.xml = xml;
    std::free(xml); // NOLINT(cppcoreguidelines-no-malloc): libvirt allocates with malloc
    out.active = lv::virDomainIsActive(dom) == 1;
    out.persistent = lv::virDomainIsPersistent(dom) == 1;
    lv::virDomainFree(dom);
    return std::optional<DomainXml>(std::move(out));
}

} // namespace passthru::scan
