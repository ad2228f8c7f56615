// SPDX-License-Identifier: GPL-2.0-or-later
#include "apply/libvirt_apply.hpp"

#include "scan/libvirt_dl.hpp"

#include "scan/libvirt_domain.hpp"

namespace passthru::apply {

namespace lv = scan::lv;

Result<void> define_domain_xml(const std::string& uri, const std::string& xml)
{
    auto conn = scan::LibvirtConnection::shared(uri);
    if (!conn) {
        return tl::unexpected(conn.error());
    }
    // Equivalent to: virsh -c URI define FILE
    virDomainPtr dom = lv::virDomainDefineXML((*conn)->get(), xml.c_str());
    if (dom == nullptr) {
        return fail(Errc::io, "libvirt refused the domain definition on " + uri + ": " + scan::libvirt_last_error());
    }
    lv::virDomainFree(dom);
    return {};
}

Result<void> restore_domain(const plan::DomainChange& change)
{
    if (change.before_xml) {
        return define_domain_xml(change.uri, *change.before_xml);
    }
    auto conn = scan::LibvirtConnection::shared(change.uri);
    if (!conn) {
        return tl::unexpected(conn.error());
    }
    virDomainPtr dom = lv::virDomainLookupByName((*conn)->get(), change.name.c_str());
    if (dom == nullptr) {
        virErrorPtr err = lv::virGetLastError();
        if (err != nullptr && err->code == VIR_ERR_NO_DOMAIN) {
            lv::virResetLastError();
            return {}; // already gone
        }
        return fail(Errc::io, "cannot look up libvirt domain '" + change.name + "': " + scan::libvirt_last_error());
    }
    // Equivalent to: virsh -c URI undefine NAME
    const int rc = lv::virDomainUndefine(dom);
    std::string message = rc < 0 ? scan::libvirt_last_error() : std::string();
    lv::virDomainFree(dom);
    if (rc < 0) {
        return fail(Errc::io, "cannot undefine libvirt domain '" + change.name + "': " + message);
    }
    return {};
}

} // namespace passthru::apply
