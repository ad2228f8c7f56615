// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/data_dir.hpp"
#include "data/gpu_profile.hpp"
#include "plan/plan.hpp"
#include "scan/inventory.hpp"
#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::plan {

// Renders a mustache template (kainjow::mustache) with JSON data.
Result<std::string> render_template(const data::DataDir& data, std::string_view name, const nlohmann::json& values);

// Everything a planning step needs.
struct PlanContext
{
    const scan::Inventory& inventory;
    const util::HostFs& fs;
    const data::DataDir& data;
    const Request& request;
    std::vector<const scan::GpuCard*> selected{}; // the cards to pass, after selection and group safety
};

// render_template, or nullopt with the plan refused (the template's error and its hints):
// how every room renders the files it stages.
std::optional<std::string> render_or_refuse(const PlanContext& ctx, Plan& plan, std::string_view name, const nlohmann::json& values);

// --gpus: all | N[,N] | SLOT[,SLOT] | FUNCTION[,FUNCTION] ("0000:01:00.0" names
// its card). The one grammar of plan, apply and verify. Returns the cards in
// inventory order; Errc::usage naming the token that selects nothing.
Result<std::vector<const scan::GpuCard*>> select_cards(const scan::Inventory& inv, const std::string& spec);

// The whole plan: selection and group safety (refusals), then the host side,
// the VM side and the network side. A refused plan has refusals and no
// changes. Errors are for bad input (Errc::usage) and unreadable hosts.
Result<Plan> make_plan(const scan::Inventory& inventory, const util::HostFs& fs, const data::DataDir& data, const Request& request);

// The parts, each appending to the plan.
// One node of a cluster mapping built from --node-scan: its name, the inventory
// of its scan and the cards --gpus selects there (pointers into that inventory).
struct MappedNode
{
    std::string node;
    scan::Inventory inventory;
    std::vector<const scan::GpuCard*> cards;
};

// One --ct: its request and the cards its --gpus selects (inventory order).
struct ContainerCards
{
    const ContainerRequest* request = nullptr;
    std::vector<const scan::GpuCard*> cards;
};

void plan_host(const PlanContext& ctx, Plan& plan);    // cmdline, modules, modprobe.d, initramfs (plan/host/)
void plan_vm(const PlanContext& ctx, Plan& plan);      // VM config, mappings, libvirt (plan/vm/)
void plan_network(const PlanContext& ctx, Plan& plan); // bond/bridge (plan/network/)
// --ct: the devN: lines of each container and the host side they need: the
// nvidia driver in the target kernel, device nodes before pve-guests.service
// starts the containers (plan/container/). ctx.selected are the VM's cards;
// MINORS_AFTER the nvidia minor each card that stays on nvidia has after the
// reboot (plan/guest_users.hpp).
void plan_containers(const PlanContext& ctx, const std::vector<ContainerCards>& containers,
                     const std::vector<std::pair<const scan::GpuCard*, std::uint32_t>>& minors_after, Plan& plan);
// The cluster mapping of --node-scan: every node's cards in pci.cfg (plan/vm/proxmox_mapping.cpp).
void plan_cluster_mapping(const PlanContext& ctx, const std::vector<MappedNode>& nodes, Plan& plan);

} // namespace passthru::plan
