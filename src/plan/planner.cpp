// SPDX-License-Identifier: GPL-2.0-or-later
// make_plan: which cards (selection), whether they may go (group safety,
// fail closed), then the host, VM and network sides.
#include <algorithm>
#include <map>
#include <set>

#include "plan/common.hpp"
#include "plan/node_scan.hpp"
#include "plan/planner.hpp"
#include "plan/trial.hpp"
#include "scan/group_rule.hpp"
#include "scan/rom_need.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"

namespace passthru::plan {

namespace detail {

std::string describe_device(const scan::Inventory& inv, const scan::PciAddress& addr)
{
    const scan::PciDevice* d = inv.find(addr);
    std::string text = addr.str();
    if (d == nullptr) {
        return text;
    }
    std::string what = d->class_name;
    if (!d->device_name.empty()) {
        what += (what.empty() ? "" : ": ") + d->device_name;
    }
    if (!d->vendor_device().empty()) {
        what += (what.empty() ? "" : " ") + std::string("[") + d->vendor_device() + "]";
    }
    if (d->driver) {
        what += ", driver " + *d->driver;
    }
    if (!what.empty()) {
        text += " (" + what + ")";
    }
    return text;
}

std::optional<std::string> read_current(const PlanContext& ctx, Plan& plan, std::string_view path)
{
    const auto info = ctx.fs.stat(path);
    if (info.type == util::FileType::missing) {
        return std::nullopt;
    }
    if (info.type != util::FileType::regular) {
        plan.refusals.push_back(
            {std::string(path) + " is not a regular file (a symlink or special file); passthru does not write through it",
             {"replace it with a regular file, or remove it, and plan again"}});
        return std::nullopt;
    }
    auto text = ctx.fs.read_file(path);
    if (!text) {
        plan.refusals.push_back({"cannot read " + std::string(path) + ": " + text.error().what(), {}});
        return std::nullopt;
    }
    return *text;
}

bool stage_file(const PlanContext& ctx, Plan& plan, std::string_view path, std::optional<std::string> after,
                std::vector<std::string> reasons)
{
    auto existing = std::find_if(plan.files.begin(), plan.files.end(), [&](const FileChange& f) { return f.path == path; });
    std::optional<std::string> before;
    if (existing != plan.files.end()) {
        before = existing->before;
    } else {
        const auto info = ctx.fs.stat(path);
        if (info.type != util::FileType::missing) {
            if (info.type != util::FileType::regular) {
                plan.refusals.push_back(
                    {std::string(path) + " is not a regular file (a symlink or special file); passthru does not write through it",
                     {"replace it with a regular file, or remove it, and plan again"}});
                return false;
            }
            auto text = ctx.fs.read_file(path);
            if (!text) {
                plan.refusals.push_back({"cannot read " + std::string(path) + ": " + text.error().what(), {}});
                return false;
            }
            before = std::move(*text);
        }
    }
    if (before == after) {
        if (existing != plan.files.end()) {
            plan.files.erase(existing);
        }
        return false;
    }
    FileChange change;
    change.path = std::string(path);
    change.before = before;
    change.after = std::move(after);
    if (before) {
        change.before_sha256 = util::sha256_hex(*before);
    }
    change.action = !before ? FileAction::create : (!change.after ? FileAction::remove : FileAction::modify);
    if (existing != plan.files.end()) {
        change.reasons = std::move(existing->reasons);
        for (auto& r : reasons) {
            change.reasons.push_back(std::move(r));
        }
        *existing = std::move(change);
    } else {
        change.reasons = std::move(reasons);
        plan.files.push_back(std::move(change));
    }
    return true;
}

} // namespace detail

namespace {

using detail::describe_device;

bool all_digits(std::string_view s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string card_label(const scan::Inventory& inv, const scan::GpuCard& card)
{
    std::string name;
    if (!card.functions.empty()) {
        if (const auto* d = inv.find(card.functions.front())) {
            name = d->device_name;
        }
    }
    const auto* first = card.functions.empty() ? nullptr : inv.find(card.functions.front());
    const std::string kind = first != nullptr && first->is_gpu_switch(inv.vendors) ? "NVSwitch " : "GPU ";
    return kind + card.slot + (name.empty() ? "" : " (" + name + ")");
}

} // namespace

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
                return tl::unexpected(Error(Errc::usage, "--gpus all: this host has no " + inv.vendors.gpus_all_names() + " GPU")
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

bool check_groups(const scan::Inventory& inv, const Request& req, const std::vector<const scan::GpuCard*>& cards, Plan& plan)
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
        if (auto need = scan::rom_file_need(inv, *card)) {
            plan.notes.push_back(card_label(inv, *card) + " is likely to need a ROM file (romfile=): " + *need);
        }
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

// What the plan says about one selected card: slot, functions, ids, name.
SelectedGpu selected_gpu(const scan::Inventory& inventory, const scan::GpuCard& card, const std::vector<detail::GpuProfile>& profiles)
{
    SelectedGpu gpu;
    gpu.slot = card.slot;
    gpu.boot_vga = card.boot_vga;
    gpu.iommu_groups = card.iommu_groups;
    for (const auto& fn : card.functions) {
        gpu.functions.push_back(fn.str());
        const auto* d = inventory.find(fn);
        gpu.ids.push_back(d != nullptr ? d->vendor_device() : std::string());
    }
    const auto* first = card.functions.empty() ? nullptr : inventory.find(card.functions.front());
    if (first != nullptr) {
        if (const auto* profile = detail::find_profile(profiles, first->vendor_device())) {
            gpu.name = profile->name;
        } else {
            gpu.name = first->device_name.empty() ? first->vendor_device() : first->device_name;
        }
    }
    return gpu;
}

// Only the bond/bridge: a host provisioned in steps plans the network alone.
Plan network_only_plan(const scan::Inventory& inventory, const util::HostFs& fs, const DataDir& data, const Request& request)
{
    Plan plan;
    plan.request = request;
    PlanContext ctx{inventory, fs, data, request, {}, nullptr};
    plan_network(ctx, plan);
    if (plan.refused()) {
        plan.files.clear();
        plan.commands.clear();
    } else if (plan.empty()) {
        plan.notes.insert(plan.notes.begin(), "nothing to do: the network is already configured as planned");
    }
    return plan;
}

// Several cards of one model give the same note once, not once per card.
void dedupe(std::vector<std::string>& lines)
{
    std::vector<std::string> out;
    for (auto& line : lines) {
        if (std::find(out.begin(), out.end(), line) == out.end()) {
            out.push_back(std::move(line));
        }
    }
    lines = std::move(out);
}

// A selected card whose physical function has SR-IOV virtual functions enabled
// serves vGPUs (or other VFs) to other VMs: passing the whole card would take
// them away, so it is refused with the way out (docs/facts.md: vgpu).
void refuse_cards_serving_vfs(const scan::Inventory& inv, const std::vector<const scan::GpuCard*>& cards, Plan& plan)
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

// NODE's refusals and warnings, named by the node, into PLAN.
void add_node_verdicts(const std::string& node, Plan& checked, Plan& plan)
{
    for (auto& r : checked.refusals) {
        plan.refusals.push_back({"node " + node + ": " + r.message, std::move(r.hints)});
    }
    for (auto& w : checked.warnings) {
        plan.warnings.push_back("node " + node + ": " + w);
    }
}

// NODE's cards for --gpus, after the checks a VM plan on that node makes
// (SR-IOV in use, group safety); false when a check refuses.
Result<bool> select_node_cards(const Request& request, MappedNode& node, Plan& plan)
{
    auto cards = select_cards(node.inventory, request.gpus);
    if (!cards) {
        Error err(cards.error().code(), "node " + node.node + ": " + cards.error().what());
        for (const auto& hint : cards.error().hints()) {
            err.with_hint(hint);
        }
        return tl::unexpected(std::move(err));
    }
    node.cards = std::move(*cards);
    Plan checked;
    refuse_cards_serving_vfs(node.inventory, node.cards, checked);
    check_groups(node.inventory, request, node.cards, checked);
    const bool fine = !checked.refused();
    add_node_verdicts(node.node, checked, plan);
    return fine;
}

// --mapping NAME --gpus SPEC --node-scan NODE=FILE...: the cluster mapping alone,
// from the nodes' scans; the cards each node's VM plan selects, in the same order,
// under the same ids (docs/facts.md: pci-mapping).
Result<Plan> cluster_mapping_plan(const scan::Inventory& inventory, const util::HostFs& fs, const DataDir& data, const Request& request)
{
    Plan plan;
    plan.request = request;
    std::vector<MappedNode> nodes;
    nodes.reserve(request.node_scans.size());
    for (const auto& ns : request.node_scans) {
        auto inv = read_node_scan(ns, inventory.vendors);
        if (!inv) {
            return tl::unexpected(inv.error());
        }
        nodes.push_back({ns.node, std::move(*inv), {}});
        const auto selected = select_node_cards(request, nodes.back(), plan);
        if (!selected) {
            return tl::unexpected(selected.error());
        }
    }
    if (!plan.refused()) {
        const PlanContext ctx{inventory, fs, data, request, {}, nullptr};
        plan_cluster_mapping(ctx, nodes, plan);
    }
    dedupe(plan.warnings);
    if (plan.refused()) {
        plan.files.clear();
    } else if (plan.empty()) {
        plan.notes.insert(plan.notes.begin(), "nothing to do: the cluster mapping is already as planned");
    }
    return plan;
}

} // namespace

Result<Plan> make_plan(const scan::Inventory& inventory, const util::HostFs& fs, const DataDir& data, const Request& request)
{
    if (request.vm.empty() && request.gpus.empty() && request.network) {
        return network_only_plan(inventory, fs, data, request);
    }
    if (request.vm.empty() && !request.node_scans.empty()) {
        return cluster_mapping_plan(inventory, fs, data, request);
    }
    if (request.vm.empty()) {
        return tl::unexpected(Error(Errc::usage, "--vm is required").with_hint("e.g. passthru plan --vm 101 --gpus all"));
    }
    if (request.gpus.empty()) {
        return tl::unexpected(Error(Errc::usage, "--gpus is required").with_hint("use --gpus all, --gpus 0,1 or --gpus 0000:01:00"));
    }
    auto cards = select_cards(inventory, request.gpus);
    if (!cards) {
        return tl::unexpected(cards.error());
    }
    Plan plan;
    plan.request = request;
    const auto loaded = detail::load_gpu_profiles(data);
    if (!loaded) {
        return tl::unexpected(loaded.error());
    }
    const auto& profiles = *loaded;
    for (const auto* card : *cards) {
        plan.gpus.push_back(selected_gpu(inventory, *card, profiles));
        detail::check_function_layout(inventory, *card, profiles, card_label(inventory, *card), plan);
        if (card->boot_vga) {
            plan.warnings.push_back(card_label(inventory, *card)
                                    + " is the boot VGA: once it is bound to vfio-pci the host loses its local console "
                                      "(use SSH, the BMC or a serial console)");
        }
    }
    refuse_cards_serving_vfs(inventory, *cards, plan);
    // On an NVSwitch system the switches go along with the GPUs (the full-passthrough model).
    const auto fabric = detail::plan_fabric(inventory, data, request, *cards, plan);
    if (!fabric) {
        return tl::unexpected(fabric.error());
    }
    std::vector<const scan::GpuCard*> passed = *cards;
    for (const auto* sw : *fabric) {
        passed.push_back(sw);
        plan.nvswitches.push_back(selected_gpu(inventory, *sw, profiles));
    }
    const bool need_acs = check_groups(inventory, request, passed, plan);
    if (plan.refused()) {
        return plan;
    }
    PlanContext ctx{inventory, fs, data, request, passed, &profiles};
    if (need_acs) {
        plan.warnings.push_back("pcie_acs_override=downstream,multifunction weakens isolation: the kernel stops trusting the PCIe "
                                "ACS capability, so devices it puts in separate groups may still talk to each other directly. "
                                "Use it only when you accept that the VM can reach those devices");
    }
    plan_host(ctx, plan);
    plan_vm(ctx, plan);
    plan_network(ctx, plan);
    if (request.trial_minutes && !plan.refused()) {
        plan_trial(ctx, plan);
    }
    dedupe(plan.warnings);
    dedupe(plan.notes);
    if (plan.refused()) {
        // A refused plan changes nothing.
        plan.files.clear();
        plan.commands.clear();
        plan.domains.clear();
        plan.kernel_args = {};
    } else if (plan.empty()) {
        plan.notes.insert(plan.notes.begin(), "nothing to do: the host is already configured as planned");
    }
    return plan;
}

} // namespace passthru::plan
