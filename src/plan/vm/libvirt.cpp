// SPDX-License-Identifier: GPL-2.0-or-later
// The libvirt side of a plan: the domain's persistent definition with the
// GPUs as PCI host devices (docs/facts.md: libvirt).
#include "plan/vm/address_space.hpp"
#include "plan/vm/libvirt_xml.hpp"
#include "plan/vm/vm_detail.hpp"
#include "scan/libvirt_domain.hpp"
#include "util/local_file.hpp"

namespace passthru::plan::detail {

namespace {

// The Proxmox VE cpu value that asks QEMU for what the domain's <cpu> asks
// (docs/facts.md: libvirt): no <cpu> is QEMU's default qemu64, host-passthrough
// is -cpu host, maximum -cpu max; maxphysaddr passthrough is host-phys-bits,
// emulate bits=N is phys-bits=N.
format::pve::PropertyString cpu_equivalent(const DomainCpu& cpu)
{
    format::pve::PropertyString out;
    const std::string model = !cpu.present                     ? "qemu64"
                              : cpu.mode == "host-passthrough" ? "host"
                              : cpu.mode == "maximum"          ? "max"
                              : cpu.mode == "custom"           ? (cpu.model.empty() ? "qemu64" : cpu.model)
                                                               : cpu.mode;
    out.set("", model);
    if (cpu.maxphysaddr == "passthrough") {
        out.set("phys-bits", "host");
    } else if (cpu.maxphysaddr == "emulate" && cpu.maxphysaddr_bits) {
        out.set("phys-bits", std::to_string(*cpu.maxphysaddr_bits));
    }
    return out;
}

// The address-space check of the Proxmox side (plan/vm/address_space.*) on
// the domain: a domain without <cpu> or with host-passthrough whose guest
// cannot map the cards' BARs gets <maxphysaddr mode='passthrough'/>; another
// CPU mode is a warning; a host CPU with too few address bits is a refusal.
void check_domain_address_space(const PlanContext& ctx, Plan& plan, std::string& xml, std::vector<std::string>& reasons)
{
    const std::uint64_t mmio64 = mmio64_needed(ctx.inventory, ctx.selected);
    const auto cpu = read_domain_cpu(xml);
    if (mmio64 == 0 || !cpu) {
        return;
    }
    auto limits = data::load_address_limits(ctx.data);
    if (!limits) {
        throw limits.error();
    }
    const std::string& name = ctx.request.vm;
    const std::string bars = mmio64_explained(ctx.inventory, ctx.selected);
    const std::uint64_t ram = cpu->memory_mib.value_or(0);
    const auto g = guest_addressing(*limits, ctx.inventory.host, cpu_equivalent(*cpu), mmio64, ram);
    if (!g.bits) {
        plan.notes.push_back("libvirt domain '" + name + "': whether the GPUs' 64-bit BARs (" + bars + ") fit its guest address space "
                             + "cannot be told (" + (g.why.empty() ? "unknown host address bits" : g.why) + ")");
        return;
    }
    if (g.fits) {
        plan.notes.push_back("libvirt domain '" + name + "': the GPUs' 64-bit BARs (" + bars + ") need " + size_text(mmio64) + "; " + g.why
                             + " gives " + std::to_string(*g.bits) + " address bits and a " + size_text(g.window_bytes)
                             + " window: they fit");
        return;
    }
    format::pve::PropertyString host_cpu;
    host_cpu.set("", "host");
    host_cpu.set("phys-bits", "host");
    const auto best = guest_addressing(*limits, ctx.inventory.host, host_cpu, mmio64, ram);
    const std::string need = "the GPUs' 64-bit BARs (" + bars + ") need " + size_text(mmio64) + ", but " + g.why + " gives the guest "
                             + std::to_string(*g.bits) + " address bits and OVMF a " + size_text(g.window_bytes) + " window";
    if (const auto limit = address_space_host_limit(*limits, ctx.inventory.host, mmio64, ram)) {
        plan.refusals.push_back(
            {"libvirt domain '" + name + "': " + *limit,
             {"pass fewer GPUs to this domain (--gpus)", "or turn Resizable BAR off for the cards in the firmware setup",
              "or use a host whose CPU has more physical address bits ('address sizes' in /proc/cpuinfo)"}});
        return;
    }
    auto wide = pass_host_phys_bits(xml);
    if (!wide) {
        plan.warnings.push_back("libvirt domain '" + name + "': " + need + "; " + wide.error().what()
                                + ": use <cpu mode='host-passthrough'> with <maxphysaddr mode='passthrough'/> (virsh edit " + name + ")");
        return;
    }
    xml = std::move(*wide);
    reasons.push_back("<cpu mode='host-passthrough'> with <maxphysaddr mode='passthrough'/>: " + need + "; the host CPU's "
                      + (best.bits ? std::to_string(*best.bits) + " bits give a " + size_text(best.window_bytes) + " window"
                                   : std::string("address bits"))
                      + " (libvirt turns maxphysaddr passthrough into QEMU's host-phys-bits=on)");
}

// A node XML file of libvirt's test driver is far smaller.
constexpr std::size_t k_max_test_driver_file = std::size_t{16} << 20;

// test:///PATH: libvirt's test driver opens PATH itself, by name. It is a file of the
// operator's, as --node-scan's are: only a regular file of a sane size is handed on (a
// FIFO would block the open forever, a device would act on it). test:///default is the
// driver's built-in host, no file.
void check_test_driver_file(const std::string& uri)
{
    constexpr std::string_view scheme = "test://";
    if (!uri.starts_with("test:///") || uri == "test:///default") {
        return;
    }
    const std::string path = uri.substr(scheme.size());
    if (auto ok = util::check_local_file(path, k_max_test_driver_file); !ok) {
        throw Error(Errc::usage, "--connect " + uri + ": " + ok.error().what())
            .with_hint("give libvirt's test driver a node XML file (--connect test:///PATH/node.xml) or its own host (test:///default)");
    }
}

} // namespace

void plan_libvirt_domain(const PlanContext& ctx, Plan& plan)
{
    // Under --root the host is a tree, not this machine: talking to this
    // machine's libvirtd would plan (and later apply) against the wrong host.
    // A URI must be explicit there (test:///default, test:///PATH/node.xml).
    std::string uri;
    if (ctx.request.connect_uri) {
        uri = *ctx.request.connect_uri;
    } else if (ctx.inventory.runtime.live) {
        uri = "qemu:///system";
    } else {
        throw Error(Errc::usage, "--backend libvirt with --root needs --connect URI")
            .with_hint("e.g. --connect test:///default (libvirt's test driver); without --root passthru uses qemu:///system");
    }
    if (!ctx.inventory.runtime.live && !scan::is_in_process_uri(uri)) {
        throw Error(Errc::precondition, "refused: under --root passthru connects to no libvirt daemon, and " + uri + " is one")
            .with_hint("pass --connect test:///PATH/node.xml (libvirt's test driver, read in this process), or plan without --root "
                       "on the host itself");
    }
    check_test_driver_file(uri);
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
    cards.reserve(ctx.selected.size());
    for (const auto* card : ctx.selected) {
        cards.push_back(card->functions);
    }
    auto edit = add_pci_hostdevs((*current)->xml, cards);
    if (!edit) {
        plan.refusals.push_back({"libvirt domain '" + name + "': " + std::string(edit.error().what()), {}});
        return;
    }
    const std::string with_hostdevs = edit->xml;
    check_domain_address_space(ctx, plan, edit->xml, edit->reasons);
    if (plan.refused()) {
        return;
    }
    if (!edit->changed && edit->xml == with_hostdevs) {
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
