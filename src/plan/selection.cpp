// SPDX-License-Identifier: GPL-2.0-or-later
// Which cards a plan passes: --gpus selection (select_cards) and group
// safety (check_groups, fail closed), and cards whose virtual functions are in use.
#include <algorithm>
#include <set>

#include "plan/plan_detail.hpp"
#include "scan/group_rule.hpp"
#include "util/strings.hpp"

namespace passthru::plan {

namespace {

using detail::describe_device;

bool all_digits(std::string_view s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

} // namespace

std::string detail::card_label(const scan::Inventory& inv, const scan::GpuCard& card)
{
    const auto* first = inv.first_function(card);
    const std::string name = first != nullptr ? first->device_name : std::string();
    const std::string kind = first != nullptr && first->is_gpu_switch(inv.vendors) ? "NVSwitch " : "GPU ";
    return kind + card.slot + (name.empty() ? "" : " (" + name + ")");
}

Result<std::vector<const scan::GpuCard*>> select_cards(const scan::Inventory& inv, const std::string& spec)
{
    std::vector<const scan::GpuCard*> out;
    const auto tokens = util::split(spec, ",");
    if (tokens.empty()) {
        return tl::unexpected(Error(Errc::usage, "--gpus is empty").with_hint("use --gpus all, --gpus 0,1 or --gpus 0000:01:00"));
    }
    std::set<const scan::GpuCard*> chosen;
    for (const auto& raw : tokens) {
        const std::string token(util::trim(raw));
        if (token.empty()) {
            continue;
        }
        if (token == "all") {
            if (tokens.size() != 1) {
                return tl::unexpected(Error(Errc::usage, "--gpus all cannot be combined with other cards"));
            }
            for (const auto& card : inv.gpus) {
                if (card.vendor_row != nullptr && card.vendor_row->gpus_all) {
                    chosen.insert(&card);
                }
            }
            if (chosen.empty()) {
                const std::string names = inv.vendors.gpus_all_names();
                return tl::unexpected(Error(Errc::usage, names.empty()
                                                             ? std::string("--gpus all: no vendor of the data (profiles/host/vendors.json) "
                                                                           "has gpus_all, so 'all' selects no card")
                                                             : "--gpus all: this host has no " + names + " GPU")
                                          .with_hint("run 'passthru scan' and pass a card by its slot, e.g. --gpus 0000:04:00"));
            }
            continue;
        }
        if (all_digits(token)) {
            const auto index = util::parse_int(token);
            if (!index || *index < 0 || static_cast<std::size_t>(*index) >= inv.gpus.size()) {
                Error err(Errc::usage, "--gpus: there is no GPU " + token + " on this host");
                err.with_hint(inv.gpus.empty() ? std::string("passthru scan finds no GPU here")
                                               : "passthru scan numbers the cards 0 to " + std::to_string(inv.gpus.size() - 1));
                return tl::unexpected(std::move(err));
            }
            chosen.insert(&inv.gpus[static_cast<std::size_t>(*index)]);
            continue;
        }
        const scan::GpuCard* card = nullptr;
        if (token.find('.') != std::string::npos) {
            if (const auto addr = scan::PciAddress::parse(token)) {
                card = inv.gpu_of(*addr);
            }
        } else if (scan::parse_slot(token)) {
            card = inv.find_gpu(token);
        } else {
            return tl::unexpected(Error(Errc::usage, "--gpus: '" + token + "' is neither an index, a slot address nor 'all'")
                                      .with_hint("use --gpus all, --gpus 0,1 or --gpus 0000:01:00"));
        }
        if (card == nullptr) {
            std::string what = "no display-class card at " + token;
            if (const auto addr = scan::parse_slot(token)) {
                if (inv.find(scan::PciAddress{addr->domain, addr->bus, addr->device, 0}) != nullptr) {
                    what = token + " is not a display-class card (only GPUs are passed by --gpus)";
                }
            }
            return tl::unexpected(Error(Errc::usage, "--gpus: " + what).with_hint("run 'passthru scan' for the GPU cards and their slots"));
        }
        chosen.insert(card);
    }
    for (const auto& card : inv.gpus) {
        if (chosen.contains(&card)) {
            out.push_back(&card);
        }
    }
    if (out.empty()) {
        return tl::unexpected(Error(Errc::usage, "--gpus '" + spec + "' selects no card"));
    }
    return out;
}

namespace {

using detail::card_label;

std::string group_list(const std::vector<int>& groups)
{
    std::vector<std::string> parts;
    parts.reserve(groups.size());
    for (int n : groups) {
        parts.push_back(std::to_string(n));
    }
    return util::join(parts, ",");
}

bool kernel_is_pve(const scan::HostInfo& host)
{
    return host.kernel && host.kernel->find("-pve") != std::string::npos;
}

// Group safety: never part of a group. Appends refusals and warnings;
// returns whether pcie_acs_override is needed (and allowed).
// Refused: the IOMMU is off, so nothing can be passed.
void refuse_iommu_off(const scan::Inventory& inv, Plan& plan)
{
    std::string fix;
    for (const auto& p : inv.problems) {
        if (p.message.rfind("no IOMMU groups", 0) == 0) {
            fix = p.fix;
        }
    }
    plan.refusals.push_back(
        {"the IOMMU is off (no IOMMU groups under /sys/kernel/iommu_groups): no device can be passed through, "
         "and vfio-pci cannot claim a device without one",
         {fix.empty() ? "enable the IOMMU in the firmware setup and on the kernel command line, reboot, and plan again" : fix,
          "then run 'passthru scan' to see the groups and plan again"}});
}

// Other GPU cards in the card's group go only together, to the same VM.
void refuse_unselected_partners(const scan::Inventory& inv, const scan::GpuCard& card, const std::set<std::string>& selected_slots,
                                Plan& plan)
{
    std::set<std::string> partners;
    for (const auto& addr : card.shares_with) {
        if (const auto* other = inv.gpu_of(addr)) {
            if (!selected_slots.contains(other->slot)) {
                partners.insert(other->slot);
            }
        }
    }
    if (partners.empty()) {
        return;
    }
    std::vector<std::string> names;
    names.reserve(partners.size());
    for (const auto& slot : partners) {
        names.push_back(card_label(inv, *inv.find_gpu(slot)));
    }
    std::vector<std::string> with(selected_slots.begin(), selected_slots.end());
    with.insert(with.end(), partners.begin(), partners.end());
    std::sort(with.begin(), with.end());
    plan.refusals.push_back(
        {card_label(inv, card) + " shares IOMMU group " + group_list(card.iommu_groups) + " with " + util::join(names, ", ")
             + ", which is not selected: a group can only go to one VM as a whole",
         {"select them together: --gpus " + util::join(with, ","), "or move one card to a slot with its own IOMMU group"}});
}

// What the other endpoints of a card's group mean for the plan.
enum class SharedGroup
{
    fine,         // no other endpoint, or refused without --acs-override
    needs_acs,    // planned because of --acs-override
    no_acs_kernel // --acs-override given, but the kernel cannot do it (refused)
};

// Non-GPU endpoints in the card's group: refused, or with --acs-override
// (Proxmox VE kernel only) planned with a warning.
SharedGroup check_other_endpoints(const scan::Inventory& inv, const Request& req, const scan::GpuCard& card, Plan& plan)
{
    if (card.other_endpoints.empty()) {
        return SharedGroup::fine;
    }
    const std::string label = card_label(inv, card);
    std::vector<std::string> devices;
    for (const auto& addr : card.other_endpoints) {
        const bool critical = std::find(card.host_critical.begin(), card.host_critical.end(), addr) != card.host_critical.end();
        devices.push_back(describe_device(inv, addr) + (critical ? " [host-critical: storage/network]" : ""));
    }
    const std::string what = label + " shares IOMMU group " + group_list(card.iommu_groups) + " with " + util::join(devices, "; ");
    if (req.acs_override == AcsOverride::yes) {
        if (!kernel_is_pve(inv.host)) {
            plan.refusals.push_back({what + "; --acs-override needs the Proxmox VE kernel, and kernel "
                                         + inv.host.kernel.value_or("(unknown)") + " does not carry the pcie_acs_override patch",
                                     {"boot a Proxmox VE kernel, or move the card to a slot with its own IOMMU group"}});
            return SharedGroup::no_acs_kernel;
        }
        plan.warnings.push_back(what
                                + ": planned only because of --acs-override, which makes the kernel pretend these devices are isolated; "
                                  "they can still reach each other by peer-to-peer DMA, so the VM is not isolated from them"
                                + (card.host_critical.empty() ? std::string() : " (among them host storage/network)"));
        return SharedGroup::needs_acs;
    }
    std::vector<std::string> bound;
    for (const auto& addr : card.other_endpoints) {
        const auto* d = inv.find(addr);
        if (d != nullptr && d->driver && *d->driver != "vfio-pci") {
            bound.push_back(addr.str() + " from " + *d->driver);
        }
    }
    std::string why = "every device of a group must be bound to vfio-pci before a VM can use any of it";
    if (!bound.empty()) {
        why += ", so starting the VM would take " + util::join(bound, ", ") + " away from the host";
    }
    plan.refusals.push_back({what + ": " + why,
                             {"move the card to a slot with its own IOMMU group (usually a CPU-attached slot), or select another card",
                              "or add --acs-override (Proxmox VE kernel only): it adds pcie_acs_override=downstream,multifunction, "
                              "which splits the group but weakens isolation between these devices"}});
    return SharedGroup::fine;
}

// The functions that go along with a card (scan/group_rule.hpp), named in the plan:
// VFIO accepts them unbound, and Proxmox VE binds them to vfio-pci with the rest of the
// group when the VM starts (docs/facts.md: group-rule).
void note_goes_along(const scan::Inventory& inv, const scan::GpuCard& card, Plan& plan)
{
    if (card.goes_along.empty()) {
        return;
    }
    std::vector<std::string> devices;
    devices.reserve(card.goes_along.size());
    for (const auto& addr : card.goes_along) {
        devices.push_back(describe_device(inv, addr));
    }
    plan.notes.push_back(card_label(inv, card) + " shares IOMMU group " + group_list(card.iommu_groups) + " with "
                         + util::join(devices, "; ") + ", which " + std::string(scan::k_goes_along_why)
                         + " (VFIO accepts it unbound, Proxmox VE's VM start binds it to vfio-pci with the rest of the "
                           "group, and it is not passed to the guest)");
}

} // namespace

bool detail::check_groups(const scan::Inventory& inv, const Request& req, const std::vector<const scan::GpuCard*>& cards, Plan& plan)
{
    if (!inv.host.iommu.enabled) {
        refuse_iommu_off(inv, plan);
        return false;
    }
    std::set<std::string> selected_slots;
    for (const auto* c : cards) {
        selected_slots.insert(c->slot);
    }
    bool need_acs = false;
    for (const auto* card : cards) {
        for (const auto& fn : card->functions) {
            const auto* d = inv.find(fn);
            if (d == nullptr || !d->iommu_group) {
                plan.refusals.push_back(
                    {card_label(inv, *card) + ": function " + fn.str() + " has no IOMMU group, so vfio-pci cannot claim it",
                     {"check 'passthru scan'; the IOMMU may not cover this device"}});
            }
        }
        refuse_unselected_partners(inv, *card, selected_slots, plan);
        note_goes_along(inv, *card, plan);
        const SharedGroup shared = check_other_endpoints(inv, req, *card, plan);
        if (shared == SharedGroup::no_acs_kernel) {
            continue;
        }
        need_acs = need_acs || shared == SharedGroup::needs_acs;
        if (card->isolation == scan::Isolation::unknown && card->iommu_groups.empty()) {
            plan.refusals.push_back({card_label(inv, *card) + " has no IOMMU group", {"check 'passthru scan'"}});
        }
    }
    if (req.acs_override == AcsOverride::yes && !need_acs && plan.refusals.empty()) {
        plan.notes.push_back("--acs-override was given but no selected card shares its IOMMU group: pcie_acs_override is not added "
                             "(it would only weaken isolation)");
    }
    return need_acs;
}

// A selected card whose physical function has SR-IOV virtual functions enabled
// serves vGPUs (or other VFs) to other VMs: passing the whole card would take
// them away, so it is refused with the way out (docs/facts.md: vgpu).
void detail::refuse_cards_serving_vfs(const scan::Inventory& inv, const std::vector<const scan::GpuCard*>& cards, Plan& plan)
{
    for (const auto* card : cards) {
        // Named as plan names the selected card (its profile first), not by the
        // machine's pci.ids, so the refusal reads the same on every release.
        std::string label = card_label(inv, *card);
        for (const auto& g : plan.gpus) {
            if (g.slot == card->slot && !g.name.empty()) {
                label = "GPU " + card->slot + " (" + g.name + ")";
            }
        }
        for (const auto& addr : card->functions) {
            const auto* d = inv.find(addr);
            if (d == nullptr || d->is_virtfn || d->sriov_numvfs.value_or(0) == 0) {
                continue;
            }
            plan.refusals.push_back({label + ": " + addr.str() + " has " + std::to_string(*d->sriov_numvfs)
                                         + " SR-IOV virtual functions enabled (on an NVIDIA vGPU host they carry the vGPUs of other VMs); "
                                           "passing the whole card would take them away",
                                     {"stop the VMs that use its virtual functions and disable them (on Proxmox VE: disable "
                                      "pve-nvidia-sriov@"
                                          + addr.str() + ".service, or NVIDIA's sriov-manage -d " + addr.str() + "), then plan again",
                                      "or select another card with --gpus"}});
        }
    }
}

} // namespace passthru::plan
