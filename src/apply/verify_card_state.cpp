// SPDX-License-Identifier: GPL-2.0-or-later
// verify's check of the selected cards' state (scan/card_state.hpp): a card left in
// D3cold or answering all ones fails, with the power-off fix and the VMs that would try
// to start it on boot.
#include <algorithm>

#include "apply/verify.hpp"
#include "format/pve_config.hpp"
#include "scan/card_state.hpp"
#include "util/strings.hpp"

namespace passthru::apply {

namespace {

// The VMs whose config passes one of FUNCTIONS and says onboot: 1.
std::vector<std::string> onboot_vms(const scan::Inventory& inventory, const util::HostFs& fs,
                                    const std::vector<scan::PciAddress>& functions)
{
    std::vector<std::string> out;
    auto names = fs.list_dir("/etc/pve/qemu-server");
    if (!names) {
        return out;
    }
    std::sort(names->begin(), names->end());
    for (const auto& name : *names) {
        if (name.size() <= 5 || name.substr(name.size() - 5) != ".conf") {
            continue;
        }
        const auto vmid = util::parse_int(name.substr(0, name.size() - 5));
        if (!vmid || *vmid < 0) {
            continue;
        }
        const auto text = fs.read_file("/etc/pve/qemu-server/" + name);
        if (!text || format::pve::VmConfig::parse(*text).get("onboot") != "1") {
            continue;
        }
        const auto passed = vm_config_functions(inventory, fs, static_cast<std::uint64_t>(*vmid));
        if (passed && std::any_of(passed->begin(), passed->end(), [&](const scan::PciAddress& a) {
                return std::find(functions.begin(), functions.end(), a) != functions.end();
            })) {
            out.push_back(std::to_string(*vmid));
        }
    }
    return out;
}

} // namespace

std::vector<VerifyCheck> check_card_states(const scan::Inventory& inventory, const util::HostFs& fs, const VerifyTarget& target)
{
    std::vector<VerifyCheck> checks;
    for (const auto& card : inventory.gpus) {
        const bool selected = std::any_of(card.functions.begin(), card.functions.end(), [&](const scan::PciAddress& a) {
            return std::find(target.functions.begin(), target.functions.end(), a) != target.functions.end();
        });
        if (!selected) {
            continue;
        }
        const auto state = scan::card_state(inventory, card);
        if (!state.did_not_come_back()) {
            continue; // nothing to say: the binding checks show a card that answers
        }
        std::string fix = state.fix;
        const auto vms = onboot_vms(inventory, fs, card.functions);
        if (!vms.empty()) {
            fix += "; until then VM" + std::string(vms.size() == 1 ? " " : "s ") + util::join(vms, ", ")
                   + " (onboot: 1) would try to start with it on the next boot: 'qm set VMID --onboot 0' to hold "
                   + (vms.size() == 1 ? "it" : "them");
        }
        checks.push_back(
            {false, "GPU " + card.slot + " did not come back: " + util::join(state.stuck, "; ") + " (its resets: " + state.resets + ")",
             fix});
    }
    return checks;
}

} // namespace passthru::apply
