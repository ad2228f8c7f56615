// SPDX-License-Identifier: GPL-2.0-or-later
// NVSwitch systems: NVIDIA's full-passthrough model (docs/facts.md: nvswitch). The GPUs
// and the NVSwitches of an HGX/DGX board go to one VM together, whose own driver and
// Fabric Manager bring up the NVLink fabric; one GPU alone goes without switches and
// without NVLink; any other selection is refused unless --no-fabric gives NVLink up.
#include <algorithm>

#include "data/nvswitch.hpp"
#include "plan/plan_detail.hpp"

namespace passthru::plan::detail {

namespace {

const NvswitchGeneration* generation_of(const scan::Inventory& inv, const std::vector<NvswitchGeneration>& gens)
{
    for (const auto& sw : inv.nvswitches) {
        for (const auto& fn : sw.functions) {
            const auto* d = inv.find(fn);
            for (const auto& gen : gens) {
                if (d != nullptr && std::find(gen.ids.begin(), gen.ids.end(), d->vendor_device()) != gen.ids.end()) {
                    return &gen;
                }
            }
        }
    }
    return nullptr;
}

bool supports(const NvswitchGeneration* gen, FabricShape shape)
{
    // A switch of no known generation: only the whole board, the one shape every generation has.
    if (gen == nullptr) {
        return shape == FabricShape::whole_board;
    }
    return std::find(gen->shapes.begin(), gen->shapes.end(), shape) != gen->shapes.end();
}

std::string switch_list(const scan::Inventory& inv)
{
    std::vector<std::string> out;
    for (const auto& sw : inv.nvswitches) {
        std::vector<std::string> groups;
        groups.reserve(sw.iommu_groups.size());
        for (int g : sw.iommu_groups) {
            groups.push_back(std::to_string(g));
        }
        out.push_back(sw.slot + (groups.empty() ? "" : " (group " + util::join(groups, ",") + ")"));
    }
    return util::join(out, ", ");
}

// The cards of the switches' vendor (profiles/host/vendors.json: the row with the
// switch class) on the host and in the selection.
struct Count
{
    std::size_t host = 0;
    std::size_t selected = 0;
};

Count fabric_vendor_cards(const scan::Inventory& inv, const std::vector<const scan::GpuCard*>& cards)
{
    const auto* vendor = inv.nvswitches.front().vendor_row.get();
    const auto of_vendor = [vendor](const scan::GpuCard& g) { return vendor != nullptr && g.vendor_row.get() == vendor; };
    Count c;
    c.host = static_cast<std::size_t>(std::count_if(inv.gpus.begin(), inv.gpus.end(), of_vendor));
    c.selected = static_cast<std::size_t>(std::count_if(cards.begin(), cards.end(), [&](const auto* g) { return of_vendor(*g); }));
    return c;
}

std::vector<const scan::GpuCard*> whole_board(const scan::Inventory& inv, const std::string& what, const NvswitchGeneration* gen,
                                              Plan& plan)
{
    std::vector<const scan::GpuCard*> out;
    out.reserve(inv.nvswitches.size());
    for (const auto& sw : inv.nvswitches) {
        out.push_back(&sw);
    }
    plan.notes.push_back("NVSwitch system (" + what + "): full passthrough, NVIDIA's model for giving a VM the whole board: the "
                         + std::to_string(out.size()) + " NVSwitches " + switch_list(inv)
                         + " go to the VM with every GPU, so the guest's driver and Fabric Manager can bring up the NVLink fabric; "
                           "the host's driver must not touch them (docs/facts.md: nvswitch)");
    if (gen != nullptr) {
        for (const auto& need : gen->guest_needs) {
            plan.notes.push_back("guest of an NVSwitch system: " + need);
        }
    } else {
        plan.notes.push_back("guest of an NVSwitch system: install Fabric Manager of the same version as the guest's NVIDIA driver "
                             "and enable its service");
    }
    return out;
}

std::string no_nvlink_consequence()
{
    return "the GPUs have no NVLink in the guest (peer traffic goes over PCIe), and the guest's NVIDIA driver must be loaded with "
           "NVLink off ('options nvidia NVreg_NvLinkDisable=1' in the guest's modprobe.d), else CUDA waits for a fabric that never "
           "comes up";
}

} // namespace

Result<std::vector<const scan::GpuCard*>> plan_fabric(const scan::Inventory& inv, const data::DataDir& data, const Request& request,
                                                      const std::vector<const scan::GpuCard*>& cards, Plan& plan)
{
    if (!inv.nvswitch_system()) {
        return std::vector<const scan::GpuCard*>{};
    }
    PASSTHRU_TRY_ASSIGN(const auto gens, data::load_nvswitch_generations(data));
    const auto* gen = generation_of(inv, gens);
    const std::string what = gen != nullptr ? gen->name : "NVSwitches of a generation profiles/host/nvswitch.json does not list";
    const Count n = fabric_vendor_cards(inv, cards);
    const bool no_fabric = request.no_fabric == NoFabric::yes;
    if (n.selected == n.host && supports(gen, FabricShape::whole_board) && !no_fabric) {
        return whole_board(inv, what, gen, plan);
    }
    if (n.selected == 1 && supports(gen, FabricShape::single_gpu)) {
        plan.notes.push_back("NVSwitch system (" + what
                             + "): one GPU, which NVIDIA's full-passthrough model supports without the "
                               "NVSwitches; they stay on the host, and "
                             + no_nvlink_consequence());
        return std::vector<const scan::GpuCard*>{};
    }
    if (no_fabric) {
        plan.warnings.push_back("--no-fabric: the " + std::to_string(n.selected) + " selected GPUs of this NVSwitch system (" + what
                                + ") go without the NVSwitches " + switch_list(inv)
                                + ", which stay on the host: " + no_nvlink_consequence());
        return std::vector<const scan::GpuCard*>{};
    }
    plan.refusals.push_back(
        {std::to_string(n.selected) + " of the " + std::to_string(n.host) + " GPUs of an NVSwitch system (" + what
             + ") is not a configuration NVIDIA's full-passthrough model supports for this board: the GPUs' NVLinks end in the "
               "NVSwitches "
             + switch_list(inv)
             + ", and without them (or with only part of the board) the guest cannot bring up "
               "the fabric, so CUDA there does not start",
         {"pass the whole board: --gpus all (every GPU and every NVSwitch go to the VM, which runs Fabric Manager)",
          std::string(supports(gen, FabricShape::single_gpu) ? "or pass one GPU alone (no NVLink)"
                                                             : "this generation has no one-GPU shape"),
          "or add --no-fabric to pass these GPUs without the NVSwitches and without NVLink"}});
    return std::vector<const scan::GpuCard*>{};
}

} // namespace passthru::plan::detail
