// SPDX-License-Identifier: GPL-2.0-or-later
// No card is taken from a guest that uses it (plan/guest_users.hpp).
#include "plan/guest_users.hpp"

#include <algorithm>

#include "format/lxc_config.hpp"

namespace passthru::plan::detail {

namespace {

std::string owner_card_label(const scan::Inventory& inv, const scan::GpuCard& card)
{
    const auto* first = inv.first_function(card);
    const std::string name = first != nullptr ? first->device_name : "";
    return "GPU " + card.slot + (name.empty() ? "" : " (" + name + ")");
}

std::string user_line(const scan::CardUser& u)
{
    return u.config + ":" + std::to_string(u.line) + ": " + u.key + ": " + u.value + (u.pending ? " (in [pve:pending])" : "");
}

// How to take the line out of the container's config.
std::string remove_hint(const scan::CardUser& u)
{
    std::string stop = u.running ? "stop it (pct stop " + u.vmid + "), then " : "";
    if (format::lxc::dev_index(u.key)) {
        return stop + "remove the line first: pct set " + u.vmid + " --delete " + u.key;
    }
    return stop + "remove line " + std::to_string(u.line) + " (" + u.key + ") from " + u.config
           + " first (raw lxc.* lines have no pct option)";
}

bool selected(const std::vector<const scan::GpuCard*>& cards, const scan::GpuCard& card)
{
    return std::find(cards.begin(), cards.end(), &card) != cards.end();
}

void refuse_container_users(const scan::Inventory& inv, const scan::GpuCard& card, Plan& plan)
{
    for (const auto& u : card.users) {
        if (u.kind != scan::GuestKind::container) {
            continue; // another VM's hostpci line is the VM planner's refusal (check_other_vms)
        }
        const std::string label = owner_card_label(inv, card);
        const std::string state = u.running ? "running" : "stopped";
        if (u.wildcard) {
            plan.warnings.push_back("container " + u.vmid + " (" + state + ") allows every such card (" + user_line(u) + ", " + u.via
                                    + "): once " + label + " is on vfio-pci it can no longer reach it");
            continue;
        }
        plan.refusals.push_back({label + " is used by container " + u.vmid + " (" + state + "): " + user_line(u) + " -> " + u.via,
                                 {"pick another card with --gpus (passthru scan lists each card's owner and users)", remove_hint(u)}});
    }
}

} // namespace

std::vector<std::pair<const scan::GpuCard*, std::uint32_t>> minors_after(const scan::Inventory& inv,
                                                                         const std::vector<const scan::GpuCard*>& cards)
{
    std::vector<const scan::GpuCard*> staying;
    for (const auto& card : inv.gpus) {
        if (card.nvidia_minor && !selected(cards, card)) {
            staying.push_back(&card);
        }
    }
    std::sort(staying.begin(), staying.end(), [](const auto* a, const auto* b) { return *a->nvidia_minor < *b->nvidia_minor; });
    std::vector<std::pair<const scan::GpuCard*, std::uint32_t>> out;
    out.reserve(staying.size());
    for (std::size_t i = 0; i < staying.size(); ++i) {
        out.emplace_back(staying[i], static_cast<std::uint32_t>(i));
    }
    return out;
}

void refuse_cards_guests_use(const scan::Inventory& inv, const std::vector<const scan::GpuCard*>& cards, Plan& plan)
{
    bool takes_nvidia_card = false;
    for (const auto* card : cards) {
        refuse_container_users(inv, *card, plan);
        takes_nvidia_card = takes_nvidia_card || card->nvidia_minor.has_value();
    }
    if (!takes_nvidia_card) {
        return;
    }
    for (const auto& [card, minor] : minors_after(inv, cards)) {
        if (minor == *card->nvidia_minor) {
            continue;
        }
        const std::string moves = owner_card_label(inv, *card) + " is /dev/nvidia" + std::to_string(*card->nvidia_minor)
                                  + " now and becomes /dev/nvidia" + std::to_string(minor)
                                  + " after the reboot (the nvidia driver numbers the cards it drives from 0; docs/facts.md: nvidia-nodes)";
        bool named = false;
        for (const auto& u : card->users) {
            if (u.kind != scan::GuestKind::container || u.wildcard) {
                continue;
            }
            named = true;
            plan.refusals.push_back(
                {"taking the selected cards from nvidia renumbers the cards that stay: " + moves + "; container " + u.vmid
                     + " names it by its number (" + user_line(u) + "), so after the reboot it " + "would find no node or another card's",
                 {"select cards so that no card a container uses moves (take the cards after it, or it too)",
                  remove_hint(u) + ", and give it the card again as /dev/nvidia" + std::to_string(minor) + " after the reboot"}});
        }
        if (!named) {
            plan.notes.push_back(moves);
        }
    }
}

} // namespace passthru::plan::detail
