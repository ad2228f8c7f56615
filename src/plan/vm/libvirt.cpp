// SPDX-License-Identifier: GPL-2.0-or-later
// The libvirt side of a plan: the domain's persistent definition with the
// GPUs as PCI host devices (docs/facts.md: libvirt).
#include "plan/vm/internal.hpp"
#include "plan/vm/libvirt_xml.hpp"
#include "scan/libvirt_domain.hpp"

namespace passthru::plan::detail {

void plan_libvirt_domain(const PlanContext& ctx, Plan& plan)
{
    // Under --root the host is a tree, not this machine: talking to this
    // machine's libvirtd would plan (and later apply) against the wrong host.
    // A URI must be explicit there (test:///default, test:///PATH/node.xml).
    std::string uri;
    if (ctx.request.connect_uri) {
        uri = *ctx.request.connect_uri;
    } else if (ctx.fs.is_live()) {
        uri = "qemu:///system";
    } else {
        throw Error(Errc::usage, "--backend libvirt with --root needs --connect URI")
            .with_hint("e.g. --connect test:///default (libvirt's test driver); without --root passthru uses qemu:///system");
    }
    const std::string& name = ctx.request.vm;
    if (ctx.selected.empty()) {
        plan.warnings.push_back("no GPU selected: libvirt domain " + name + " is not changed");
        return;
    }
    auto current = scan::read_domain_xml(uri, name);
    if (!current) {
        plan.refusals.push_back({current.error().what(), {"check --connect and that libvirtd runs (virsh -c " + uri + " list --all)"}});
        return;
    }
    if (!*current) {
        plan.refusals.push_back({"libvirt domain '" + name + "' does not exist on " + uri,
                                 {"create it first (virt-install or virsh define), then plan again"}});
        return;
    }
    std::vector<std::vector<scan::PciAddress>> cards;
    for (const auto* card : ctx.selected) {
        cards.push_back(card->functions);
    }
    auto edit = add_pci_hostdevs((*current)->xml, cards);
    if (!edit) {
        plan.refusals.push_back({"libvirt domain '" + name + "': " + std::string(edit.error().what()), {}});
        return;
    }
    if (!edit->changed) {
        plan.notes.push_back("libvirt domain '" + name + "' already has every selected GPU as host devices");
        return;
    }
    if ((*current)->active) {
        plan.warnings.push_back("libvirt domain '" + name + "' is running: the new definition takes effect at its next start");
    }
    if (!(*current)->persistent) {
        plan.warnings.push_back("libvirt domain '" + name + "' is transient: defining it makes it persistent");
    }
    DomainChange change;
    change.uri = uri;
    change.name = name;
    change.before_xml = (*current)->xml;
    change.after_xml = std::move(edit->xml);
    change.reasons = std::move(edit->reasons);
    plan.domains.push_back(std::move(change));
}

} // namespace passthru::plan::detail
