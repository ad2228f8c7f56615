// SPDX-License-Identifier: GPL-2.0-or-later
// Another node's scan (plan --node-scan NODE=FILE): any document is an inventory
// or one error, never a crash; in an accepted one every card's functions are
// devices of the inventory, and selecting every card gives cards of it.
#include <nlohmann/json.hpp>

#include "fuzz.hpp"
#include "plan/node_scan.hpp"
#include "plan/planner.hpp"

using namespace passthru;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto doc = nlohmann::json::parse(fuzz::text_of(data, size), nullptr, false);
    if (doc.is_discarded()) {
        return 0;
    }
    const auto inv = plan::inventory_from_scan_json(doc, "fuzz", {});
    if (!inv) {
        return 0;
    }
    for (const auto& card : inv->gpus) {
        for (const auto& fn : card.functions) {
            fuzz::require(inv->find(fn) != nullptr, "a card's functions are devices of the scan");
        }
    }
    if (const auto cards = plan::select_cards(*inv, "all")) {
        for (const auto* card : *cards) {
            fuzz::require(card >= inv->gpus.data() && card < inv->gpus.data() + inv->gpus.size(), "selected cards are the scan's");
        }
    }
    return 0;
}
