// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/plan.hpp"
#include "scan/inventory.hpp"
#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::plan {

// passthru's own data: templates/ and profiles/. Lookup order for a name:
// <root>/etc/passthru/<kind>/<name> (the admin's override, read through
// HostFs), then --data-dir, then the installed /usr/share/passthru, then the
// source tree (for running from a build directory).
class DataDir
{
public:
    DataDir(const util::HostFs& fs, std::optional<std::filesystem::path> data_dir);

    // kind is "templates" or "profiles"; name may contain '/' ("gpus/tu102.json").
    Result<std::string> read(std::string_view kind, std::string_view name) const;
    // Names (relative to kind/subdir) of the files in every layer, overrides first, de-duplicated.
    std::vector<std::string> list(std::string_view kind, std::string_view subdir) const;
    // Where a name was found (for messages).
    std::optional<std::string> origin(std::string_view kind, std::string_view name) const;
    // The one way a loader reads a data file: profiles/NAME's text and where it
    // was found ("profiles/NAME" when no layer says) go to PARSE(text, where),
    // whose Result is returned; a file that cannot be read is read()'s error.
    template<class Parse>
    auto load_profile(std::string_view name, Parse&& parse) const -> decltype(parse(std::string_view(), std::string()))
    {
        auto text = read("profiles", name);
        if (!text) {
            return tl::unexpected(text.error());
        }
        return std::forward<Parse>(parse)(*text, origin("profiles", name).value_or("profiles/" + std::string(name)));
    }

private:
    Result<std::string> read_uncached(std::string_view kind, std::string_view name) const;

    const util::HostFs& m_fs;
    // Shipped layers, after the override: --data-dir, the installed data,
    // and the repository's only for a binary run from its build tree.
    std::vector<std::filesystem::path> m_dirs;
    // Every file is read once per command, however many planners ask for it.
    mutable std::map<std::string, Result<std::string>> m_read_cache;
};

// profiles/host/kernel.json: the kernel releases scan and plan judge by
// (schema in docs/data.md). Errc::usage naming the file and the field when it
// breaks the schema; callers stop before anything is written.
Result<scan::KernelCutoffs> load_kernel_cutoffs(const DataDir& data);
// profiles/host/vendors.json: the GPU vendors passthru handles (schema in
// docs/data.md), loaded and refused like load_kernel_cutoffs.
Result<scan::GpuVendors> load_gpu_vendors(const DataDir& data);

// Renders a mustache template (kainjow::mustache) with JSON data.
Result<std::string> render_template(const DataDir& data, std::string_view name, const nlohmann::json& values);

namespace detail {
struct GpuProfile;
}

// Everything a planning step needs.
struct PlanContext
{
    const scan::Inventory& inventory;
    const util::HostFs& fs;
    const DataDir& data;
    const Request& request;
    std::vector<const scan::GpuCard*> selected; // the cards to pass, after selection and group safety
    // profiles/gpus, loaded once per command by make_plan; nullptr: none (the rooms then know no model)
    const std::vector<detail::GpuProfile>* gpu_profiles;
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
Result<Plan> make_plan(const scan::Inventory& inventory, const util::HostFs& fs, const DataDir& data, const Request& request);

// The parts, each appending to the plan.
// One node of a cluster mapping built from --node-scan: its name, the inventory
// of its scan and the cards --gpus selects there (pointers into that inventory).
struct MappedNode
{
    std::string node;
    scan::Inventory inventory;
    std::vector<const scan::GpuCard*> cards;
};

void plan_host(const PlanContext& ctx, Plan& plan);    // cmdline, modules, modprobe.d, initramfs (plan/host_*.cpp)
void plan_vm(const PlanContext& ctx, Plan& plan);      // VM config, mappings, libvirt (plan/vm_*.cpp)
void plan_network(const PlanContext& ctx, Plan& plan); // bond/bridge (plan/network_*.cpp)
// The cluster mapping of --node-scan: every node's cards in pci.cfg (plan/vm/proxmox_mapping.cpp).
void plan_cluster_mapping(const PlanContext& ctx, const std::vector<MappedNode>& nodes, Plan& plan);

} // namespace passthru::plan
