// SPDX-License-Identifier: GPL-2.0-or-later
// A card is never taken from a guest that uses it: the selected cards' container
// users (scan/card_users.hpp) are refused, and so is a selection that renumbers
// the nvidia device minors of cards containers keep (docs/facts.md: nvidia-nodes).
#pragma once

#include <vector>

#include "plan/plan.hpp"
#include "scan/inventory.hpp"

namespace passthru::plan::detail {

// Refuses (exit 3) a selected card that a container's config reaches by name or
// number, naming the container, the line and the way out; warns about lines that
// allow every card of a kind (c 195:*). Refuses a selection that moves the nvidia
// minor of a card that stays with the host while a container names that card.
void refuse_cards_guests_use(const scan::Inventory& inv, const std::vector<const scan::GpuCard*>& cards, Plan& plan);

// The nvidia minor each card that stays on nvidia will have after the selected
// cards leave it: the rank of its current minor among the staying cards
// (minors are handed out first-free at probe, in probe order). By slot.
std::vector<std::pair<const scan::GpuCard*, std::uint32_t>> minors_after(const scan::Inventory& inv,
                                                                         const std::vector<const scan::GpuCard*>& cards);

} // namespace passthru::plan::detail
