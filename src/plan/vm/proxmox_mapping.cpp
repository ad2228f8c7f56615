// SPDX-License-Identifier: GPL-2.0-or-later
// The cluster PCI mappings of the Proxmox VE backend (plan/vm/proxmox.cpp),
// /etc/pve/mapping/pci.cfg: --mapping NAME and the ids it gives the cards,
// this node's entry for each card, and the cluster mapping of --node-scan
// (plan_cluster_mapping). Rules: docs/facts.md: pci-mapping.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/grammar.hpp"
#include "format/pve_mapping.hpp"
#include "plan/plan_detail.hpp"
#include "plan/vm/proxmox_detail.hpp"
#include "plan/vm/vm_detail.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

std::string mapping_id_for(std::string_view name, std::size_t index)
{
    return index == 0 ? std::string(name) : std::string(name) + "-" + std::to_string(index);
}

namespace {

// --mapping NAME and the ids it gives N cards (NAME, NAME-1 .. NAME-(N-1)) are mapping ids.
void check_mapping_name(const std::string& mapping, std::size_t cards)
{
    if (!format::pve::valid_config_id(mapping) || !format::pve::valid_config_id(mapping_id_for(mapping, cards))) {
        throw Error(Errc::usage, "--mapping: '" + mapping + "' is not a valid mapping id")
            .with_hint("a letter, then letters, digits, '-' or '_' (at least 2 characters)");
    }
}

// --- mapping: /etc/pve/mapping/pci.cfg ---------------------------------------

// NODE's entry for CARD in mapping MAP_ID of FILE; false when refused (into PLAN).
bool map_card(Plan& plan, const std::string& node, const Card& card, const std::string& map_id, format::pve::PciMappingFile& file,
              std::vector<std::string>& map_reasons)
{
    if (card.fn0 == nullptr || !card.fn0->vendor || !card.fn0->device) {
        plan.refusals.push_back({"cannot map " + card.label + ": its vendor/device id is unknown", {}});
        return false;
    }
    format::pve::MapEntry entry;
    entry.node = node;
    entry.paths = {card.slot};
    entry.id = card.fn0->vendor_device();
    if (card.fn0->subsystem_vendor && card.fn0->subsystem_device) {
        entry.subsystem_id = util::hex(*card.fn0->subsystem_vendor, 4) + ":" + util::hex(*card.fn0->subsystem_device, 4);
    }
    entry.iommu_group = card.fn0->iommu_group;
    const auto* section = file.find(map_id);
    if (section == nullptr) {
        const std::string description = card.label.substr(4) + ", added by passthru";
        // The label carries a device name, which a --node-scan document gives: one line or nothing.
        if (auto bad = format::invalid_value(format::Grammar::line_text, description, "the description of mapping " + map_id)) {
            plan.refusals.push_back({*bad, {}});
            return false;
        }
        file.add_section(map_id, {entry}, description);
        map_reasons.push_back("new mapping " + map_id + ": " + entry.str());
        return true;
    }
    const auto local =
        std::find_if(section->maps.begin(), section->maps.end(), [&](const format::pve::MapEntry& map) { return map.node == entry.node; });
    if (local == section->maps.end()) {
        const auto other =
            std::find_if(section->maps.begin(), section->maps.end(), [&](const format::pve::MapEntry& map) { return map.id != entry.id; });
        if (other != section->maps.end()) {
            plan.warnings.push_back("mapping " + map_id + " maps node " + other->node + " to a " + other->id
                                    + " device, this node's card is " + entry.id + ": a VM moved between them sees a different GPU model");
        }
        file.add_map(map_id, entry);
        map_reasons.push_back("mapping " + map_id + ": add node " + entry.node + ": " + entry.str());
        return true;
    }
    const bool same = std::any_of(local->paths.begin(), local->paths.end(), [&](const std::string& p) {
        return util::to_lower(p) == card.slot || util::to_lower(p) == card.functions.front();
    });
    if (!same) {
        plan.refusals.push_back(
            {"mapping " + map_id + " already maps node " + entry.node + " to " + util::join(local->paths, ";") + ", not " + card.slot,
             {"choose another --mapping name"}});
        return false;
    }
    if (local->paths.size() == 1 && local->paths.front() == card.functions.front() && card.functions.size() > 1) {
        plan.warnings.push_back("mapping " + map_id + " names only function 0 (" + local->paths.front() + "): the other functions of "
                                + card.label + " stay on the host side");
    }
    plan.notes.push_back("mapping " + map_id + " already maps " + card.slot + " on node " + entry.node);
    return true;
}

// pci.cfg as FILE has it, when that differs from BEFORE.
void stage_mapping_file(const PlanContext& ctx, Plan& plan, const std::optional<std::string>& before,
                        const format::pve::PciMappingFile& file, const std::vector<std::string>& reasons)
{
    const std::string after = file.str();
    if (before && *before == after) {
        return;
    }
    stage_file(ctx, plan, k_pci_mapping_file, after, reasons);
    for (auto& f : plan.files) {
        if (f.path == k_pci_mapping_file && f.action == FileAction::create) {
            f.mode = 0640; // pmxcfs shows every file as root:www-data 0640
        }
    }
}

} // namespace

void read_mappings(VmJob& job)
{
    MappingContext& mctx = job.mctx;
    mctx.node = job.ctx.inventory.runtime.node_name;
    if (job.ctx.fs.exists(k_pci_mapping_file)) {
        mctx.before = read_current(job.ctx, job.plan, k_pci_mapping_file);
        if (mctx.before) {
            mctx.file = format::pve::PciMappingFile::parse(*mctx.before);
        }
    }
    const auto& mapping = job.ctx.request.mapping;
    if (!mapping) {
        return;
    }
    check_mapping_name(*mapping, job.cards.size());
    if (!mctx.node) {
        job.plan.refusals.push_back({"cannot tell this node's name (/etc/hostname is missing or empty): a mapping needs it", {}});
    }
}

bool plan_mappings(VmJob& job)
{
    if (!job.ctx.request.mapping) {
        return true;
    }
    format::pve::PciMappingFile file = job.mctx.file ? *job.mctx.file : format::pve::PciMappingFile::parse("");
    std::vector<std::string> map_reasons;
    for (std::size_t k = 0; k < job.cards.size(); ++k) {
        if (!map_card(job.plan, *job.mctx.node, job.cards[k], mapping_id_for(*job.ctx.request.mapping, k), file, map_reasons)) {
            return false;
        }
    }
    stage_mapping_file(job.ctx, job.plan, job.mctx.before, file, map_reasons);
    job.mctx.file = std::move(file); // the mappings as the VM will start with them
    return true;
}

} // namespace passthru::plan::detail

namespace passthru::plan {

void plan_cluster_mapping(const PlanContext& ctx, const std::vector<MappedNode>& nodes, Plan& plan)
{
    std::size_t most = 0;
    for (const auto& node : nodes) {
        most = std::max(most, node.cards.size());
    }
    const std::string& mapping = ctx.request.mapping.value();
    detail::check_mapping_name(mapping, most);
    std::optional<std::string> before;
    if (ctx.fs.exists(k_pci_mapping_file)) {
        before = detail::read_current(ctx, plan, k_pci_mapping_file);
        if (plan.refused()) {
            return;
        }
    }
    auto file = format::pve::PciMappingFile::parse(before.value_or(""));
    std::vector<std::string> reasons;
    for (const auto& node : nodes) {
        for (std::size_t k = 0; k < node.cards.size(); ++k) {
            const auto card = detail::card_of(node.inventory, *node.cards[k], "");
            if (!detail::map_card(plan, node.node, card, detail::mapping_id_for(mapping, k), file, reasons)) {
                return;
            }
        }
    }
    detail::stage_mapping_file(ctx, plan, before, file, reasons);
}

} // namespace passthru::plan
