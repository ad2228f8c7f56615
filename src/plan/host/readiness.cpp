// SPDX-License-Identifier: GPL-2.0-or-later
// The readiness notes the GPU profiles feed: host RAM against the VRAM
// being passed, known quirks of the models.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <set>
#include <utility>

#include "plan/host/host_detail.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

std::string gib(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, v == std::floor(v) ? "%.0f GiB" : "%.1f GiB", v);
    return buf;
}

// One warning per known issue of each selected model (profiles/gpus
// known_issues[]), naming the cards, what to do and the reports behind it.
void known_issue_warnings(const PlanContext& ctx, Plan& plan)
{
    std::vector<std::pair<const GpuProfile*, std::vector<std::string>>> models; // in selection order
    for (const auto* card : ctx.selected) {
        const GpuProfile* p = card->profile_row.get();
        if (p == nullptr || p->known_issues.empty()) {
            continue;
        }
        auto it = std::find_if(models.begin(), models.end(), [p](const auto& m) { return m.first == p; });
        if (it == models.end()) {
            models.emplace_back(p, std::vector<std::string>{});
            it = std::prev(models.end());
        }
        it->second.push_back(card->slot);
    }
    for (const auto& [p, slots] : models) {
        for (const auto& k : p->known_issues) {
            plan.warnings.push_back(p->name + " (" + util::join(slots, ", ") + "): known issue: " + k.issue + " What to do: " + k.advice
                                    + " (reported in: " + util::join(k.sources, "; ") + "; profiles/gpus/" + p->file + ")");
        }
    }
}

} // namespace

void plan_readiness(const PlanContext& ctx, Plan& plan, const HostInputs& /*in*/)
{
    known_issue_warnings(ctx, plan);
    double vram = 0;
    std::vector<std::string> unknown;
    std::vector<std::string> caveats;
    std::set<std::string> quirks_seen;
    for (const auto* card : ctx.selected) {
        const GpuProfile* p = card->profile_row.get();
        if (p == nullptr || !p->vram_gib) {
            unknown.push_back(card->slot);
            continue;
        }
        vram += *p->vram_gib;
        if (!p->vram_note.empty()) {
            caveats.push_back(p->name + ": " + p->vram_note);
        }
        for (const auto& q : p->quirks) {
            if (quirks_seen.insert(q).second) {
                plan.notes.push_back(p->name + " (" + card->slot + "): " + q);
            }
        }
    }
    const auto mem = ctx.inventory.host.mem_total_kib;
    if (vram <= 0 || !mem || *mem == 0) {
        if (!unknown.empty()) {
            plan.notes.push_back("no GPU profile (profiles/gpus) knows the card(s) at " + util::join(unknown, ", ")
                                 + ": the VRAM check is skipped; add a profile under /etc/passthru/profiles/gpus/");
        }
        return;
    }
    const double ram = static_cast<double>(*mem) / 1024.0 / 1024.0;
    std::string text = "memory: the host has " + gib(std::round(ram)) + " of RAM for " + gib(vram) + " of VRAM passed through ("
                       + (unknown.empty() ? "" : "not counting " + util::join(unknown, ", ") + "; ") + "rule of thumb: 2-3x the VRAM, i.e. "
                       + gib(2 * vram) + " to " + gib(3 * vram)
                       + ", so the VM can stage data "
                         "for the GPUs and the host keeps enough for itself)";
    if (ram < 2 * vram) {
        plan.warnings.push_back(text + ": below 2x, expect the VM to run short of memory when it feeds the GPUs");
    } else if (ram < 3 * vram) {
        plan.notes.push_back(text + ": within the range, but leave the VM most of it");
    } else {
        plan.notes.push_back(text + ": enough");
    }
    for (const auto& c : caveats) {
        plan.notes.push_back(c);
    }
}

} // namespace passthru::plan::detail
