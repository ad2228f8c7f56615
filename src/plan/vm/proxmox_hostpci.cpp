// SPDX-License-Identifier: GPL-2.0-or-later
// The hostpciN lines of the Proxmox VE backend (plan/vm/proxmox.cpp): one per
// card, the entry that already passes it reused, else the lowest free index;
// the value passes every function as one PCIe device, or the card's mapping.
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "format/pve_config.hpp"
#include "format/pve_mapping.hpp"
#include "plan/vm/proxmox_detail.hpp"
#include "plan/vm/vm_detail.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

using format::pve::HostPci;
using format::pve::VmConfig;

// hostpci keys in use (current config and [PENDING]).
std::set<int> used_hostpci(const VmConfig& config)
{
    std::set<int> used;
    auto note = [&](const std::string& key) {
        if (key.starts_with("hostpci") && key.size() > 7) {
            if (auto n = util::parse_int(key.substr(7)); n && *n >= 0 && *n < k_max_hostpci) {
                used.insert(static_cast<int>(*n));
            }
        }
    };
    for (const auto& [key, value] : config.entries()) {
        note(key);
    }
    for (const auto& key : config.pending_keys()) {
        note(key);
    }
    return used;
}

// --- slots: one hostpciN per card ------------------------------------------

// The entry of the config that already passes CARD, if any; false when that
// entry also passes other devices (refused).
bool reuse_slot(VmJob& job, const Card& card, const std::set<std::string>& claimed, CardSlot& slot)
{
    const auto* mappings = job.mctx.file ? &*job.mctx.file : nullptr;
    for (const auto& [key, value, ids] : format::pve::passed_ids(job.config, "", mappings, job.mctx.node)) {
        if (claimed.count(key) != 0U || !covers_card(ids, card)) {
            continue;
        }
        const HostPci hp = HostPci::parse(value);
        // The entry must be about this card only.
        for (const auto& hid : hp.host_ids) {
            const bool own = std::any_of(card.functions.begin(), card.functions.end(),
                                         [&](const std::string& fn) { return format::pve::hostpci_id_covers(hid, fn); });
            if (!own) {
                job.plan.refusals.push_back(
                    {key + " of VM " + job.id + " (" + value + ") mixes " + card.label + " with other devices; passthru does not split it",
                     {"edit " + key + " by hand (qm set " + job.id + " --" + key + " ...)"}});
                return false;
            }
        }
        slot.key = key;
        slot.before = value;
        slot.value = hp.options;
        return true;
    }
    return true;
}

// The lowest free hostpciN; false when all are taken (refused).
bool free_slot(VmJob& job, const Card& card, std::set<int>& used, CardSlot& slot)
{
    for (int n = 0; n < k_max_hostpci; ++n) {
        if (used.count(n) == 0U) {
            used.insert(n);
            slot.key = "hostpci" + std::to_string(n);
            return true;
        }
    }
    job.plan.refusals.push_back({"VM " + job.id + " has no free hostpciN (hostpci0-hostpci15 are all in use) for " + card.label,
                                 {"remove an unused hostpci entry first"}});
    return false;
}

// The slot's value: the function-less id (every function, one multifunction
// guest device) or the mapping, and pcie=1; other options kept.
void fill_slot(VmJob& job, const Card& card, const std::optional<std::string>& map_id, CardSlot& slot)
{
    slot.value.remove("");
    slot.value.remove("host");
    slot.value.remove("mapping");
    if (map_id) {
        slot.value.set("mapping", *map_id);
    } else {
        slot.value.parts.insert(slot.value.parts.begin(), {"", card.slot});
    }
    slot.value.set("pcie", "1");
    // qemu-server puts /usr/share/kvm/ before the name (docs/facts.md: rom-files).
    const auto rom = job.rom_names.find(card.slot);
    if (rom != job.rom_names.end()) {
        slot.value.set("romfile", rom->second);
    }
    const std::string after = slot.value.str();
    if (slot.before != after) {
        job.config.set(slot.key, after);
        job.reasons.push_back(
            change_line(slot.key, slot.before, after,
                        card.label + ", all " + std::to_string(card.functions.size()) + " functions as one multifunction PCIe device"
                            + (map_id ? " through mapping " + *map_id : "") + (rom != job.rom_names.end() ? ", with its ROM file" : "")));
    }
}

// A [PENDING] hostpciN of the VM itself that passes CARD: Proxmox applies it
// when the VM next starts, so a slot planned now would pass the card twice.
// Refused: the admin's pending change is applied or reverted first
// (docs/facts.md: vm-config).
bool guard_pending_card(VmJob& job, const Card& card)
{
    const auto* mappings = job.mctx.file ? &*job.mctx.file : nullptr;
    for (const auto& [key, value, ids] : format::pve::passed_ids(job.config, "PENDING", mappings, job.mctx.node)) {
        if (covers_card(ids, card)) {
            job.plan.refusals.push_back(
                {"VM " + job.id + " has a pending change that passes " + card.label + " (" + key + ": " + value + ", in [PENDING])",
                 {"apply it (it takes effect when the VM next starts; 'qm pending " + job.id + "' lists it) or revert it ('qm set " + job.id
                  + " --revert " + key + "'), then plan again"}});
            return false;
        }
    }
    return true;
}

} // namespace

bool assign_slots(VmJob& job)
{
    std::set<int> used = used_hostpci(job.config);
    std::set<std::string> claimed;
    for (std::size_t k = 0; k < job.cards.size(); ++k) {
        const Card& card = job.cards[k];
        const auto& mapping = job.ctx.request.mapping;
        const std::optional<std::string> map_id = mapping ? std::optional<std::string>(mapping_id_for(*mapping, k)) : std::nullopt;
        CardSlot slot;
        if (!guard_pending_card(job, card) || !reuse_slot(job, card, claimed, slot)) {
            return false;
        }
        if (slot.key.empty() && !free_slot(job, card, used, slot)) {
            return false;
        }
        claimed.insert(slot.key);
        if (!job.guard_pending(slot.key)) {
            return false;
        }
        fill_slot(job, card, map_id, slot);
        job.slots.push_back(std::move(slot));
    }
    return true;
}

} // namespace passthru::plan::detail
