// SPDX-License-Identifier: GPL-2.0-or-later
// --romfile SLOT=FILE for the Proxmox VE backend: the file read once on this machine,
// checked as a PCI option ROM for the card (format/pci_rom), staged as a binary file
// in /usr/share/kvm under a name that follows from the card's ids and the bytes, and
// named by romfile= on the card's hostpci line (docs/facts.md: rom-files).
#include <algorithm>
#include <cstdio>
#include <string>

#include "format/pci_rom.hpp"
#include "plan/plan_detail.hpp"
#include "plan/vm/proxmox_detail.hpp"
#include "util/local_file.hpp"
#include "util/sha256.hpp"

namespace passthru::plan::detail {

namespace {

// A ROM BAR is at most 16 MiB (PCI's expansion ROM BAR); a GPU's image is a few hundred KiB.
constexpr std::size_t k_max_rom_bytes = std::size_t{16} << 20U;

Error rom_error(const RomFile& rf, const std::string& why)
{
    return Error(Errc::usage, "--romfile " + rf.slot + "=" + rf.file + ": " + why);
}

std::string rom_name(std::uint16_t vendor, std::uint16_t device, const std::string& sha256)
{
    char ids[16];
    std::snprintf(ids, sizeof ids, "%04x-%04x", vendor, device);
    return std::string(k_kvm_rom_d.prefix) + ids + "-" + sha256.substr(0, 16) + std::string(k_kvm_rom_d.suffix);
}

// The planned card RF names; throws (usage) when it names none of them.
const Card& card_for(const VmJob& job, const RomFile& rf)
{
    auto found = select_cards(job.ctx.inventory, rf.slot);
    if (!found || found->size() != 1) {
        throw rom_error(rf, found ? "SLOT names more than one card" : found.error().what());
    }
    const auto it = std::find_if(job.cards.begin(), job.cards.end(), [&](const Card& c) { return c.card == found->front(); });
    if (it == job.cards.end()) {
        throw rom_error(rf, "that card is not among the cards --gpus selects").with_hint("add it to --gpus, or leave out --romfile");
    }
    return *it;
}

} // namespace

void plan_romfiles(VmJob& job)
{
    for (const auto& rf : job.ctx.request.romfiles) {
        const Card& card = card_for(job, rf);
        if (job.rom_names.count(card.slot) != 0U) {
            throw rom_error(rf, card.label + " has a --romfile already");
        }
        if (card.fn0 == nullptr || !card.fn0->vendor || !card.fn0->device) {
            throw rom_error(rf, "the card's vendor and device ids are unknown, so no ROM can be checked against them");
        }
        // The bytes are read once: what is checked is what is staged (and a saved
        // plan carries them, so apply --plan compares the file as it is then).
        auto bytes = util::read_local_file(rf.file, k_max_rom_bytes);
        if (!bytes) {
            throw rom_error(rf, bytes.error().what());
        }
        const auto verdict = format::pci_rom::check_for(*bytes, *card.fn0->vendor, *card.fn0->device);
        if (!verdict.ok()) {
            throw rom_error(rf, "not a ROM for " + card.label + ": " + verdict.detail)
                .with_hint("'passthru rom dump " + card.slot + " FILE' reads the card's own ROM when no driver holds it");
        }
        const std::string name = rom_name(*card.fn0->vendor, *card.fn0->device, util::sha256_hex(*bytes));
        const std::string path = k_kvm_rom_d.file(name);
        const std::string what = verdict.summary() + ", " + std::to_string(bytes->size()) + " bytes, from " + rf.file;
        if (stage_file(job.ctx, job.plan, path, std::move(*bytes), {"the ROM image of " + card.label + " (" + what + ")"})) {
            for (auto& f : job.plan.files) {
                if (f.path == path) {
                    f.binary = true;
                }
            }
        }
        job.rom_names[card.slot] = name;
    }
}

} // namespace passthru::plan::detail
