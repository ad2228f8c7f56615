// SPDX-License-Identifier: GPL-2.0-or-later
// make_plan: the cards (selection.cpp: --gpus and group safety), then the
// host, VM and network sides.
#include <algorithm>
#include <map>
#include <set>

#include "plan/common.hpp"
#include "plan/guest_users.hpp"
#include "plan/node_scan.hpp"
#include "plan/planner.hpp"
#include "plan/trial.hpp"
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

} // namespace

Result<Plan> make_plan(const scan::Inventory& inventory, const util::HostFs& fs, const data::DataDir& data, const Request& request)
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
    for (const auto* card : *cards) {
        plan.gpus.push_back(selected_gpu(inventory, *card));
        detail::check_function_layout(inventory, *card, card_label(inventory, *card), plan);
        if (card->boot_vga) {
            plan.warnings.push_back(card_label(inventory, *card)
                                    + " is the boot VGA: once it is bound to vfio-pci the host loses its local console "
                                      "(use SSH, the BMC or a serial console)");
        }
    }
    refuse_cards_serving_vfs(inventory, *cards, plan);
    detail::refuse_cards_guests_use(inventory, *cards, plan);
    // On an NVSwitch system the switches go along with the GPUs (the full-passthrough model).
    const auto fabric = detail::plan_fabric(inventory, data, request, *cards, plan);
    if (!fabric) {
        return tl::unexpected(fabric.error());
    }
    std::vector<const scan::GpuCard*> passed = *cards;
    for (const auto* sw : *fabric) {
        passed.push_back(sw);
        plan.nvswitches.push_back(selected_gpu(inventory, *sw));
    }
    const bool need_acs = check_groups(inventory, request, passed, plan);
    if (plan.refused()) {
        return plan;
    }
    PlanContext ctx{.inventory = inventory, .fs = fs, .data = data, .request = request, .selected = passed};
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
