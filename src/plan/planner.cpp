// SPDX-License-Identifier: GPL-2.0-or-later
// make_plan: the cards (selection.cpp: --gpus and group safety), then the
// host, VM and network sides.
#include <algorithm>
#include <map>
#include <set>

#include "plan/guest_users.hpp"
#include "plan/node_scan.hpp"
#include "plan/plan_detail.hpp"
#include "plan/planner.hpp"
#include "plan/trial.hpp"
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

using detail::card_label;
using detail::check_groups;
using detail::refuse_cards_serving_vfs;

// What the plan says about one selected card: slot, functions, ids, name.
// A card likely to need a ROM file (scan/rom_need.hpp) that --romfile gives none: a note.
void note_rom_need(const scan::Inventory& inventory, const Request& request, const scan::GpuCard& card, Plan& plan)
{
    for (const auto& rf : request.romfiles) {
        auto named = select_cards(inventory, rf.slot);
        if (named && named->size() == 1 && named->front() == &card) {
            return;
        }
    }
    if (auto need = scan::rom_file_need(inventory, card)) {
        plan.notes.push_back(card_label(inventory, card) + " is likely to need a ROM file (romfile=): " + *need);
    }
}

SelectedGpu selected_gpu(const scan::Inventory& inventory, const scan::GpuCard& card)
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
    const auto* first = inventory.first_function(card);
    if (first != nullptr) {
        if (const auto* profile = card.profile_row.get()) {
            gpu.name = profile->name;
        } else {
            gpu.name = first->device_name.empty() ? first->vendor_device() : first->device_name;
        }
    }
    return gpu;
}

// Only the bond/bridge: a host provisioned in steps plans the network alone.
Plan network_only_plan(const scan::Inventory& inventory, const util::HostFs& fs, const data::DataDir& data, const Request& request)
{
    Plan plan;
    plan.request = request;
    PlanContext ctx{.inventory = inventory, .fs = fs, .data = data, .request = request};
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

// What a node scan document says differently from this host's own scan about its cards
// (slot, vendor, functions, groups, isolation, host-critical neighbours); nullopt: nothing.
std::optional<std::string> node_scan_differs(const scan::Inventory& own, const scan::Inventory& doc)
{
    const auto key = [](const scan::GpuCard& c) {
        std::string k = c.slot + " vendor " + std::to_string(c.vendor) + " functions";
        for (const auto& f : c.functions) {
            k += " " + f.str();
        }
        k += " groups";
        for (int g : c.iommu_groups) {
            k += " " + std::to_string(g);
        }
        k += " isolation " + std::string(scan::to_string(c.isolation)) + " host-critical";
        for (const auto& f : c.host_critical) {
            k += " " + f.str();
        }
        return k;
    };
    if (own.gpus.size() != doc.gpus.size()) {
        return "it lists " + std::to_string(doc.gpus.size()) + " GPU card(s), this host has " + std::to_string(own.gpus.size());
    }
    for (std::size_t i = 0; i < own.gpus.size(); ++i) {
        if (key(own.gpus[i]) != key(doc.gpus[i])) {
            return "card " + doc.gpus[i].slot + " is not as this host's card " + own.gpus[i].slot;
        }
    }
    return std::nullopt;
}

// --mapping NAME --gpus SPEC --node-scan NODE=FILE...: the cluster mapping alone,
// from the nodes' scans; the cards each node's VM plan selects, in the same order,
// under the same ids (docs/facts.md: pci-mapping).
Result<Plan> cluster_mapping_plan(const scan::Inventory& inventory, const util::HostFs& fs, const data::DataDir& data,
                                  const Request& request)
{
    Plan plan;
    plan.request = request;
    std::vector<MappedNode> nodes;
    nodes.reserve(request.node_scans.size());
    for (const auto& ns : request.node_scans) {
        PASSTHRU_TRY_ASSIGN(auto inv, read_node_scan(ns, inventory.vendors));
        // This host's own cards come from its own scan: a document naming this host (as the
        // cluster workflow passes every node's scan, this one's too) must agree with it, and
        // the live scan is what is mapped.
        const auto& self = inventory.runtime.node_name;
        if (self && util::to_lower(*self) == util::to_lower(ns.node)) {
            if (const auto differs = node_scan_differs(inventory, inv)) {
                return tl::unexpected(Error(Errc::usage, "--node-scan " + ns.node + "=" + ns.file + ": " + ns.node
                                                             + " is this host (its /etc/hostname), and the document differs from "
                                                               "its own scan: "
                                                             + *differs)
                                          .with_hint("take a fresh 'passthru scan --json' on " + ns.node
                                                     + ", or leave its --node-scan out: this host is mapped from its own scan"));
            }
            inv = inventory;
        }
        nodes.push_back({ns.node, std::move(inv), {}});
        PASSTHRU_TRY(select_node_cards(request, nodes.back(), plan));
    }
    if (!plan.refused()) {
        const PlanContext ctx{.inventory = inventory, .fs = fs, .data = data, .request = request};
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

// --ct N --gpus SPEC: each container's cards, "--ct N: " before a selection error.
Result<std::vector<ContainerCards>> select_container_cards(const scan::Inventory& inventory, const Request& request)
{
    std::vector<ContainerCards> out;
    for (const auto& c : request.containers) {
        auto cards = select_cards(inventory, c.gpus);
        if (!cards) {
            Error err(cards.error().code(), "--ct " + c.ct + ": " + cards.error().what());
            for (const auto& hint : cards.error().hints()) {
                err.with_hint(hint);
            }
            return tl::unexpected(std::move(err));
        }
        out.push_back({&c, std::move(*cards)});
    }
    return out;
}

// The VM's cards: selection, layout, boot VGA, SR-IOV, guests that use them, the
// fabric and group safety. The cards to pass (with NVSwitches), or nullopt with
// the plan refused; whether --acs-override is needed goes to NEED_ACS.
Result<std::optional<std::vector<const scan::GpuCard*>>> vm_cards(const scan::Inventory& inventory, const data::DataDir& data,
                                                                  const Request& request, Plan& plan, bool& need_acs)
{
    PASSTHRU_TRY_ASSIGN(const auto cards, select_cards(inventory, request.gpus));
    for (const auto* card : cards) {
        plan.gpus.push_back(selected_gpu(inventory, *card));
        detail::check_function_layout(inventory, *card, card_label(inventory, *card), plan);
        note_rom_need(inventory, request, *card, plan);
        if (card->boot_vga) {
            plan.warnings.push_back(card_label(inventory, *card)
                                    + " is the boot VGA: once it is bound to vfio-pci the host loses its local console "
                                      "(use SSH, the BMC or a serial console)");
        }
    }
    refuse_cards_serving_vfs(inventory, cards, plan);
    detail::refuse_cards_guests_use(inventory, cards, plan);
    // On an NVSwitch system the switches go along with the GPUs (the full-passthrough model).
    PASSTHRU_TRY_ASSIGN(const auto fabric, detail::plan_fabric(inventory, data, request, cards, plan));
    std::vector<const scan::GpuCard*> passed = cards;
    for (const auto* sw : fabric) {
        passed.push_back(sw);
        plan.nvswitches.push_back(selected_gpu(inventory, *sw));
    }
    need_acs = check_groups(inventory, request, passed, plan);
    if (plan.refused()) {
        return std::optional<std::vector<const scan::GpuCard*>>{};
    }
    return std::optional{std::move(passed)};
}

// What the request must hold: --vm with --gpus, or --ct with theirs.
Result<void> check_guests_given(const Request& request)
{
    if (request.vm.empty() && request.containers.empty()) {
        return tl::unexpected(Error(Errc::usage, "--vm or --ct is required")
                                  .with_hint("e.g. passthru plan --vm 101 --gpus all, or passthru plan --ct 105 --gpus 2"));
    }
    if (!request.vm.empty() && request.gpus.empty()) {
        return tl::unexpected(Error(Errc::usage, "--gpus is required").with_hint("use --gpus all, --gpus 0,1 or --gpus 0000:01:00"));
    }
    return {};
}

} // namespace

Result<Plan> make_plan(const scan::Inventory& inventory, const util::HostFs& fs, const data::DataDir& data, const Request& request)
{
    if (request.vm.empty() && request.gpus.empty() && request.network && request.containers.empty()) {
        return network_only_plan(inventory, fs, data, request);
    }
    if (request.vm.empty() && !request.node_scans.empty()) {
        return cluster_mapping_plan(inventory, fs, data, request);
    }
    PASSTHRU_TRY(check_guests_given(request));
    PASSTHRU_TRY_ASSIGN(const auto containers, select_container_cards(inventory, request));
    Plan plan;
    plan.request = request;
    bool need_acs = false;
    std::vector<const scan::GpuCard*> passed;
    if (!request.vm.empty()) {
        PASSTHRU_TRY_ASSIGN(auto cards, vm_cards(inventory, data, request, plan, need_acs));
        if (!cards) {
            return plan;
        }
        passed = std::move(*cards);
    }
    PlanContext ctx{.inventory = inventory, .fs = fs, .data = data, .request = request, .selected = passed};
    if (need_acs) {
        plan.warnings.push_back("pcie_acs_override=downstream,multifunction weakens isolation: the kernel stops trusting the PCIe "
                                "ACS capability, so devices it puts in separate groups may still talk to each other directly. "
                                "Use it only when you accept that the VM can reach those devices");
    }
    if (!request.vm.empty()) {
        plan_host(ctx, plan);
        plan_vm(ctx, plan);
    }
    plan_containers(ctx, containers, detail::minors_after(inventory, passed), plan);
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
