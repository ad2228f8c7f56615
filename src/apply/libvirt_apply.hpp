// SPDX-License-Identifier: GPL-2.0-or-later
// Applying and undoing a plan::DomainChange through the libvirt API.
#pragma once

#include <string>

#include "plan/plan.hpp"
#include "util/error.hpp"

namespace passthru::apply {

// Defines (or redefines) a persistent domain from XML on uri.
// Equivalent to: virsh -c URI define FILE (virDomainDefineXML).
// Errc::io with libvirt's captured message on failure; libvirt prints nothing.
Result<void> define_domain_xml(const std::string& uri, const std::string& xml);

// Undoes a DomainChange: redefines before_xml, or undefines the domain
// (virsh undefine NAME) when there was none. Errc::io on failure.
Result<void> restore_domain(const plan::DomainChange& change);

} // namespace passthru::apply
