// SPDX-License-Identifier: GPL-2.0-or-later
// VM sizing for the Proxmox VE backend (plan/vm/proxmox.cpp): the memory a
// new VM gets and the memory advice for the cards' VRAM, the cores a node can
// start, huge pages, and the edit path's numa, affinity, balloon and
// hugepages lines.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/pve_config.hpp"
#include "plan/plan_detail.hpp"
#include "plan/vm/proxmox_detail.hpp"
#include "plan/vm/start_checks.hpp"
#include "plan/vm/vm_detail.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

std::uint64_t hugepage_mib(std::string_view hugepages)
{
    return hugepages == "1024" ? 1024 : 2;
}

std::uint64_t round_up(std::uint64_t value, std::uint64_t step)
{
    return (value + step - 1) / step * step;
}

// Guest memory advice for the cards (MiB), or nullopt without VRAM figures.
std::optional<std::uint64_t> memory_advice(const VmProfile& profile, std::optional<std::uint64_t> vram)
{
    if (!vram) {
        return std::nullopt;
    }
    const auto want = static_cast<std::uint64_t>(std::llround(static_cast<double>(*vram) * profile.ram_per_vram)) + profile.memory_base_mib;
    return round_up(std::max(profile.memory_min_mib, want), 1024);
}

} // namespace

std::optional<std::uint64_t> total_vram_mib(const std::vector<Card>& cards)
{
    std::uint64_t total = 0;
    for (const auto& card : cards) {
        if (card.fn0 == nullptr) {
            return std::nullopt;
        }
        const auto* profile = card.card->profile_row.get();
        if (profile == nullptr || !profile->vram_gib) {
            return std::nullopt;
        }
        total += static_cast<std::uint64_t>(std::llround(*profile->vram_gib * 1024.0));
    }
    return total;
}

std::uint64_t new_vm_memory(VmJob& job, std::optional<std::uint64_t> vram)
{
    const VmProfile& profile = job.profile;
    std::uint64_t memory = profile.create_memory_mib;
    if (const auto advice = memory_advice(profile, vram); advice && *advice > memory) {
        memory = *advice;
    }
    if (job.ctx.inventory.host.mem_total_kib) {
        const std::uint64_t host_mib = *job.ctx.inventory.host.mem_total_kib / 1024;
        const std::uint64_t reserve = std::max<std::uint64_t>(4096, host_mib / 8);
        if (memory + reserve > host_mib) {
            const std::uint64_t capped = host_mib > reserve + 1024 ? round_up(host_mib - reserve, 1024) - 1024 : 1024;
            job.plan.warnings.push_back("VM " + job.id + " gets " + std::to_string(capped) + " MiB instead of " + std::to_string(memory)
                                        + " MiB: the host has " + std::to_string(host_mib) + " MiB and passthrough pins all guest memory");
            memory = capped;
        }
    }
    if (profile.hugepages) {
        memory = round_up(memory, hugepage_mib(*profile.hugepages));
    }
    return memory;
}

int new_vm_cores(VmJob& job)
{
    const VmProfile& profile = job.profile;
    const int cpus = job.ctx.inventory.host.cpu_count;
    if (cpus <= 0 || profile.create_sockets * profile.create_cores <= cpus) {
        return profile.create_cores;
    }
    const int cores = max_cores(cpus, profile.create_sockets);
    job.plan.warnings.push_back("VM " + job.id + " gets " + std::to_string(cores) + " cores instead of the profile's "
                                + std::to_string(profile.create_cores) + ": this node has " + std::to_string(cpus)
                                + " CPUs, and Proxmox VE starts no VM with more vCPUs than that");
    return cores;
}

bool edit_numa_affinity(VmJob& job)
{
    const std::string& id = job.id;
    if (job.profile.numa && format::pve::parse_boolean(job.config.get("numa").value_or("0")) != true) {
        if (!job.guard_pending("numa")) {
            return false;
        }
        set_key(job.config, job.reasons, "numa", "1", "guest NUMA topology; hugepages need it");
    }
    if (!job.profile.affinity) {
        return true;
    }
    const Affinity aff = plan_affinity(job.ctx, job.cards);
    if (!aff.cpulist) {
        job.plan.notes.push_back("VM " + id + ": " + aff.note);
        return true;
    }
    if (const auto current = job.config.get("affinity")) {
        if (*current != *aff.cpulist) {
            job.plan.notes.push_back("VM " + id + " keeps its affinity " + *current + " (the GPUs' node has CPUs " + *aff.cpulist + ")");
        }
        return true;
    }
    if (!job.guard_pending("affinity")) {
        return false;
    }
    set_key(job.config, job.reasons, "affinity", *aff.cpulist, aff.note);
    const int vcpus = static_cast<int>(util::parse_int(job.config.get("cores").value_or("1")).value_or(1)
                                       * util::parse_int(job.config.get("sockets").value_or("1")).value_or(1));
    if (const auto n = cpulist_count(*aff.cpulist); n && vcpus > *n) {
        job.plan.warnings.push_back("VM " + id + " has " + std::to_string(vcpus) + " vCPUs but the GPUs' NUMA node has "
                                    + std::to_string(*n) + " CPUs");
    }
    return true;
}

bool edit_memory(VmJob& job)
{
    const VmProfile& profile = job.profile;
    const std::string& id = job.id;
    if (profile.balloon && job.config.get("balloon") != std::to_string(*profile.balloon)) {
        if (!job.guard_pending("balloon")) {
            return false;
        }
        set_key(job.config, job.reasons, "balloon", std::to_string(*profile.balloon),
                "passthrough pins all guest memory, so the balloon cannot give any back");
    }
    const std::uint64_t memory = vm_memory_mib(job.config);
    if (profile.hugepages && job.config.get("hugepages") != *profile.hugepages) {
        const auto page = hugepage_mib(*profile.hugepages);
        if (memory % page != 0 || memory % 2 != 0) {
            job.plan.warnings.push_back("hugepages not set: VM " + id + " has " + std::to_string(memory) + " MiB, not a multiple of the "
                                        + std::to_string(page) + " MiB page size");
        } else if (job.guard_pending("hugepages")) {
            set_key(job.config, job.reasons, "hugepages", *profile.hugepages, "huge pages back the guest memory (needs numa: 1)");
        } else {
            return false;
        }
    }
    if (const auto advice = memory_advice(profile, total_vram_mib(job.cards)); advice && memory < *advice) {
        job.plan.warnings.push_back("VM " + id + " has " + std::to_string(memory) + " MiB of memory; for these GPUs the " + profile.name
                                    + " profile advises at least " + std::to_string(*advice) + " MiB (qm set " + id + " --memory "
                                    + std::to_string(*advice) + ")");
    }
    const auto host_kib = job.ctx.inventory.host.mem_total_kib;
    if (host_kib && memory > *host_kib / 1024) {
        job.plan.warnings.push_back("VM " + id + " has more memory (" + std::to_string(memory) + " MiB) than the host ("
                                    + std::to_string(*host_kib / 1024)
                                    + " MiB); with passthrough all of it is pinned, so it will not start");
    }
    return true;
}

} // namespace passthru::plan::detail
