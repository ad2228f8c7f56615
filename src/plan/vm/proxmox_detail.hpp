// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to the Proxmox VE backend (plan/vm/proxmox.cpp and the
// proxmox_*.cpp files beside it): the job its steps share, and what one of
// its files calls in another. Not a public interface.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/pve_config.hpp"
#include "format/pve_mapping.hpp"
#include "plan/plan.hpp"
#include "plan/planner.hpp"
#include "plan/vm/address_space.hpp"
#include "plan/vm/profile.hpp"
#include "scan/inventory.hpp"

namespace passthru::plan::detail {

// What the planner needs of one selected card.
struct Card
{
    const scan::GpuCard* card = nullptr;
    const scan::PciDevice* fn0 = nullptr;
    std::string slot;                   // "0000:01:00", lowercase
    std::vector<std::string> functions; // "0000:01:00.0", ...
    std::string label;                  // "GPU 0000:01:00 (TU102 ...)"
};

// This node's name and the cluster mappings, pci.cfg as read (read_mappings).
struct MappingContext
{
    std::optional<std::string> node;
    std::optional<format::pve::PciMappingFile> file;
    std::optional<std::string> before;
};

// Config lines for one card: reuse the entry that already names it, else
// the lowest free hostpciN.
struct CardSlot
{
    std::string key;
    std::optional<std::string> before;
    format::pve::PropertyString value;
};

// What the steps of plan_proxmox_vm share: the request, the VM config as read
// and as edited, and the reasons of its changes. The create path (no config:
// one qm create) and the edit path (the config edited in place) run the same
// refusals, slots and mapping steps, and build their cpu, memory and EFI disk
// values with the same functions.
struct VmJob
{
    VmJob(const PlanContext& c, const VmProfile& p, Plan& out) : ctx(c), profile(p), plan(out) {}

    const PlanContext& ctx;
    const VmProfile& profile;
    Plan& plan;
    std::uint64_t vmid = 0;
    std::string id;
    std::vector<Card> cards;
    std::string conf_path;
    bool exists = false;
    std::optional<std::string> before;
    format::pve::VmConfig config;
    MappingContext mctx;
    std::vector<std::string> reasons;
    std::vector<CardSlot> slots;
    std::map<std::string, std::string> rom_names; // --romfile: card slot -> the romfile= name (plan_romfiles)
    AddressLimits address_limits;                 // profiles/host/address-space.json

    // The cpu line PLANNED after the address-space check (docs/facts.md:
    // address-space); its warnings go to the plan.
    AddressDecision check_address_space(const format::pve::PropertyString& planned,
                                        const std::optional<format::pve::PropertyString>& current, std::uint64_t ram_mib);

    // Keys [PENDING] sets or deletes win at the next start (qemu-server
    // applies pending changes then): refuse rather than plan a change that
    // would be overridden. False when refused.
    bool guard_pending(std::string_view key);
};

// --- host facts (proxmox_host.cpp) -------------------------------------------

std::string vm_conf_path(std::uint64_t vmid);
// CARD of INVENTORY as the planner names it: NAME (the profile's) or its pci.ids name.
Card card_of(const scan::Inventory& inventory, const scan::GpuCard& gpu, std::string name);
std::vector<Card> describe_cards(const PlanContext& ctx, const Plan& plan);
bool covers_card(const std::vector<std::string>& ids, const Card& card);

// Running the way qemu-server's vm_running_locally decides it: the pid file
// names a live process whose command line has "-pidfile <that file>".
// Under --root a pid file whose process the tree cannot show counts as
// running (fail closed): a copied tree cannot prove the VM stopped.
enum class RunState
{
    stopped,
    running,
    unknown_pidfile,
};

// From the pid file and the process it names as scan read them
// (scan::RuntimeState::qemu_pid_files).
RunState vm_run_state(const scan::RuntimeState& host, std::uint64_t vmid, std::string& evidence);
// The first storage in /etc/pve/storage.cfg that holds VM images.
std::optional<std::string> images_storage(const scan::RuntimeState& host);
// Storage of the VM's first disk ("local-lvm:vm-101-disk-0,..." -> "local-lvm").
std::optional<std::string> vm_disk_storage(const format::pve::VmConfig& config);

// vCPU affinity: the CPUs of the NUMA node all cards sit on.
struct Affinity
{
    std::optional<std::string> cpulist;
    std::string note;
};

Affinity plan_affinity(const PlanContext& ctx, const std::vector<Card>& cards);

// --- hostpciN lines (proxmox_hostpci.cpp) --------------------------------------

// hostpciN per card: the entry that already names it, else the lowest free one.
bool assign_slots(VmJob& job);

// --- ROM files, /usr/share/kvm (proxmox_rom.cpp) ---------------------------------

// --romfile: each file checked for its card and staged; rom_names filled. Throws
// Errc::usage (exit 2, nothing written) for a file that is not a ROM for its card.
void plan_romfiles(VmJob& job);

// --- mappings, /etc/pve/mapping/pci.cfg (proxmox_mapping.cpp) -------------------

// This node's name and the cluster mappings; --mapping checked against them.
void read_mappings(VmJob& job);
// With --mapping: one mapping per card in pci.cfg; false when refused.
bool plan_mappings(VmJob& job);

// --- VM sizing: memory, vCPUs, huge pages (proxmox_sizing.cpp) -------------------

// Total VRAM of the cards from their GPU profile rows; nullopt when a card has none.
std::optional<std::uint64_t> total_vram_mib(const std::vector<Card>& cards);
// Memory of a new VM (MiB): the profile's, raised to the advice for the cards,
// capped to what the host can pin, rounded to the huge page.
std::uint64_t new_vm_memory(VmJob& job, std::optional<std::uint64_t> vram);
// The cores of a new VM: the profile's, fewer when the node has fewer CPUs
// than sockets x cores (Proxmox VE would refuse to start it; docs/facts.md: qm-start).
int new_vm_cores(VmJob& job);

// Steps of the edit path (plan_config_edit); false when refused.
// numa: 1 and the vCPU affinity to the GPUs' NUMA node (an affinity set by
// hand is kept).
bool edit_numa_affinity(VmJob& job);
// balloon, hugepages, and advice on the memory size (never changed).
bool edit_memory(VmJob& job);

// --- the VM config: qm create or the edit (proxmox_config.cpp) -------------------

// A change's reason line: "key: before -> after (why)".
std::string change_line(std::string_view key, const std::optional<std::string>& before, std::string_view after, std::string_view why);
// Records `key: value` in the config when it differs, with its reason.
void set_key(format::pve::VmConfig& config, std::vector<std::string>& reasons, std::string_view key, const std::string& value,
             std::string_view why);
// A new VM: one qm create with everything, so PVE allocates the disks and
// checks the VMID cluster-wide itself.
void plan_qm_create(VmJob& job);
// An existing VM: every edit step, then the config staged with its reasons.
void plan_config_edit(VmJob& job);

} // namespace passthru::plan::detail
