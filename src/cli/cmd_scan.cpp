// SPDX-License-Identifier: GPL-2.0-or-later
#include <cstdio>
#include <set>

#include "apply/pending.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "cli/global_words.hpp"
#include "cli/request_options.hpp"
#include "cli/scan_json.hpp"
#include "scan/card_users.hpp"
#include "scan/group_rule.hpp"
#include "scan/scanner.hpp"
#include "util/strings.hpp"

namespace passthru::cli {

namespace {

using util::heading;
using util::Style;
using util::styled;

std::string link_text(const scan::PciDevice& d)
{
    if (!d.link || !d.link->width) {
        return "";
    }
    // Appended piece by piece: a one-character literal before a temporary
    // string draws a false -Wrestrict from GCC 12 at -O3 (GCC bug 105651).
    std::string out(1, 'x');
    out += std::to_string(*d.link->width);
    if (d.link->max_width && *d.link->max_width != *d.link->width) {
        out += '/';
        out += std::to_string(*d.link->max_width);
    }
    if (d.link->speed_gts) {
        const std::string speed = d.link->speed.value_or("");
        out += ' ';
        out += speed.substr(0, speed.find(' '));
        out += "GT/s";
    }
    return out;
}

// "Host": CPU, kernel, Proxmox VE, boot loader, command line, IOMMU, memory.
std::string render_host(const scan::HostInfo& host, bool color)
{
    std::string out;
    out += styled("Host", Style::bold, color) + "\n";
    util::TextTable facts;
    facts.add_row({"CPU", (host.cpu_model.empty() ? host.cpu_vendor : host.cpu_model) + " ("
                              + (host.cpu_vendor.empty() ? "unknown vendor" : host.cpu_vendor)
                              + (host.virtualization == true ? (host.is_amd() ? ", svm" : ", vmx") : "") + ")"});
    facts.add_row({"Kernel", host.kernel.value_or("unknown")});
    facts.add_row(
        {"Proxmox VE", host.pve_version
                           ? *host.pve_version + (host.qemu_server_version ? " (qemu-server " + *host.qemu_server_version + ")" : "")
                           : "not installed"});
    facts.add_row({"Boot loader", std::string(scan::to_string(host.bootloader)) + " (" + host.bootloader_evidence + ")"});
    facts.add_row({"Command line", host.cmdline.value_or("unknown")});
    if (host.cmdline && scan::is_trial_boot(*host.cmdline)) {
        facts.add_row(
            {"Trial boot", with_global_words("yes: booted once from the passthru trial entry (" + std::string(scan::k_trial_marker)
                                             + "); run 'passthru verify', then 'passthru confirm' to keep it or 'passthru rollback'")});
    }
    std::string iommu = host.iommu.enabled ? "on, " + std::to_string(host.iommu.groups) + " groups" : "off (no IOMMU groups)";
    if (host.iommu.enabled) {
        iommu += ", interrupt remapping "
                 + std::string(host.iommu.interrupt_remapping ? (*host.iommu.interrupt_remapping ? "yes" : "no") : "unknown");
    }
    facts.add_row({"IOMMU", iommu});
    if (host.vgpu_host()) {
        facts.add_row({"NVIDIA vGPU", "set up for vGPU: " + util::join(host.vgpu_evidence, "; ")
                                          + " (plan keeps the nvidia driver: no blacklist or softdep for it)"});
    }
    if (host.mem_total_kib) {
        const auto mib = *host.mem_total_kib / 1024;
        facts.add_row({"Memory", mib >= 10 * 1024 ? std::to_string((mib + 512) / 1024) + " GiB" : std::to_string(mib) + " MiB"});
    }
    out += facts.render("  ");
    return out;
}

// "PCI devices by IOMMU group": every function in group order, then those in
// no group; GPU functions marked with their card index.
std::string render_devices(const scan::Inventory& inv, bool color)
{
    // GPU index per slot, for the table marks.
    std::map<std::string, int> gpu_index;
    for (std::size_t i = 0; i < inv.gpus.size(); ++i) {
        gpu_index[inv.gpus[i].slot] = static_cast<int>(i);
    }

    std::string out = heading("PCI devices by IOMMU group", Style::bold, color) + "\n";
    util::TextTable table;
    table.add_row({"GROUP", "ADDRESS", "CLASS", "ID", "DRIVER", "LINK", "DEVICE"});
    auto add_device = [&](const scan::PciDevice& d, const std::string& group) {
        std::string name = d.vendor_name;
        if (!d.device_name.empty()) {
            name += (name.empty() ? "" : " ") + d.device_name;
        }
        if (name.empty()) {
            name = d.class_name.empty() ? "Device" : d.class_name;
        }
        std::string marks;
        if (auto it = gpu_index.find(d.address.slot()); it != gpu_index.end() && !d.is_virtfn) {
            marks += " [GPU " + std::to_string(it->second) + "]";
        }
        if (d.boot_vga) {
            marks += " [boot VGA]";
        }
        std::string line_name = name + marks;
        if (!marks.empty()) {
            line_name = name + styled(marks, Style::cyan, color);
        }
        table.add_row({group, d.address.str(), d.class16() ? util::hex(*d.class16(), 4) : "?",
                       d.vendor_device().empty() ? "?" : d.vendor_device(), d.driver.value_or("-"), link_text(d), line_name});
    };
    std::set<scan::PciAddress> listed;
    for (const auto& [number, group] : inv.groups) {
        for (const auto& addr : group.devices) {
            if (const auto* d = inv.find(addr)) {
                add_device(*d, std::to_string(number));
                listed.insert(addr);
            }
        }
    }
    for (const auto& d : inv.devices) {
        if (!listed.contains(d.address)) {
            add_device(d, "-");
        }
    }
    out += table.render("  ");
    return out;
}

// "GPU cards": index, slot, name, functions, groups and the isolation verdict.
std::string render_gpus(const scan::Inventory& inv, bool color)
{
    std::string out = heading("GPU cards", Style::bold, color) + "\n";
    if (inv.gpus.empty()) {
        out += "  none\n";
    }
    util::TextTable cards;
    for (std::size_t i = 0; i < inv.gpus.size(); ++i) {
        const auto& g = inv.gpus[i];
        const scan::PciDevice* first = inv.first_function(g);
        std::string name = first != nullptr ? first->device_name : "";
        std::vector<std::string> groups;
        groups.reserve(g.iommu_groups.size());
        for (int n : g.iommu_groups) {
            groups.push_back(std::to_string(n));
        }
        std::string verdict(scan::to_string(g.isolation));
        const Style verdict_style = g.isolation == scan::Isolation::clean    ? Style::green
                                    : g.isolation == scan::Isolation::shared ? Style::red
                                                                             : Style::yellow;
        std::string extra = g.vendor_row != nullptr ? "" : " (not " + inv.vendors.gpus_all_names() + ")";
        if (g.boot_vga) {
            extra += " boot VGA";
        }
        if (!g.goes_along.empty()) {
            std::vector<std::string> along;
            along.reserve(g.goes_along.size());
            for (const auto& a : g.goes_along) {
                along.push_back(a.str());
            }
            extra += " (" + util::join(along, ", ") + " " + std::string(scan::k_goes_along_why) + ")";
        }
        cards.add_row({std::to_string(i), g.slot, name.empty() ? "Device" : name,
                       std::to_string(g.functions.size()) + (g.functions.size() == 1 ? " function" : " functions"),
                       groups.empty() ? "no group" : "group " + util::join(groups, ","), styled(verdict, verdict_style, color) + extra});
    }
    out += cards.render("  ");
    return out;
}

// "GPU owners": each card's driver and owner, then every guest config line that reaches it.
std::string render_owners(const scan::Inventory& inv, bool color)
{
    if (inv.gpus.empty()) {
        return {};
    }
    std::string out = heading("GPU owners", Style::bold, color) + "\n";
    util::TextTable table;
    for (std::size_t i = 0; i < inv.gpus.size(); ++i) {
        const auto& g = inv.gpus[i];
        std::string node = g.nvidia_minor ? "/dev/nvidia" + std::to_string(*g.nvidia_minor) : "";
        table.add_row({std::to_string(i), g.slot,
                       "driver " + g.driver.value_or("none") + (inv.host.vgpu_host() && g.driver == "nvidia" ? " (vGPU host)" : ""), node,
                       scan::card_owner(g)});
    }
    out += table.render("  ");
    for (std::size_t i = 0; i < inv.gpus.size(); ++i) {
        for (const auto& u : inv.gpus[i].users) {
            out += "  GPU " + std::to_string(i) + ": " + std::string(scan::to_string(u.kind)) + " " + u.vmid + " ("
                   + (u.running ? "running" : "stopped") + ") " + u.config + ":" + std::to_string(u.line) + " " + u.key + ": " + u.value
                   + (u.pending ? " [pending]" : "") + " -> " + u.via + (u.wildcard ? " (allows every such card)" : "") + "\n";
        }
    }
    return out;
}

// "NVSwitch system": only on a host with NVSwitches; each switch with its id, name and group.
std::string render_nvswitches(const scan::Inventory& inv, bool color)
{
    if (!inv.nvswitch_system()) {
        return {};
    }
    const std::size_t n = inv.nvswitches.size();
    std::string out = heading("NVSwitch system", Style::bold, color) + ": " + std::to_string(n) + (n == 1 ? " NVSwitch" : " NVSwitches")
                      + " (NVIDIA class 0680) join the GPUs' NVLinks into one fabric; passing the GPUs with their "
                        "NVLinks means passing the switches too (passthru plan --gpus all)\n";
    util::TextTable table;
    for (const auto& sw : inv.nvswitches) {
        const scan::PciDevice* first = inv.first_function(sw);
        std::vector<std::string> groups;
        groups.reserve(sw.iommu_groups.size());
        for (int g : sw.iommu_groups) {
            groups.push_back(std::to_string(g));
        }
        std::string verdict(scan::to_string(sw.isolation));
        const Style verdict_style = sw.isolation == scan::Isolation::shared ? Style::red : Style::green;
        table.add_row({sw.slot, first != nullptr && !first->vendor_device().empty() ? first->vendor_device() : "?",
                       first != nullptr && !first->device_name.empty() ? first->device_name : "NVSwitch",
                       groups.empty() ? "no group" : "group " + util::join(groups, ","), styled(verdict, verdict_style, color)});
    }
    out += table.render("  ");
    return out;
}

// "Problems": one line each, with its fix below.
std::string render_problems(const std::vector<scan::Problem>& problems, bool color)
{
    std::string out = heading("Problems", Style::bold, color) + "\n";
    if (problems.empty()) {
        out += "  none\n";
    }
    for (const auto& p : problems) {
        const Style s = p.severity == scan::Severity::error     ? Style::red
                        : p.severity == scan::Severity::warning ? Style::yellow
                                                                : Style::dim;
        out += "  " + styled(std::string(scan::to_string(p.severity)) + ":", s, color) + " " + p.message + "\n";
        if (!p.fix.empty()) {
            out += "    fix: " + p.fix + "\n";
        }
    }
    return out;
}

// The GPU cards first, after the host facts: what a user looks for. The full
// PCI list by IOMMU group follows for reference, the problems come last.
std::string render_human(const scan::Inventory& inv, bool color)
{
    return render_host(inv.host, color) + render_gpus(inv, color) + render_owners(inv, color) + render_nvswitches(inv, color)
           + render_devices(inv, color) + render_problems(inv.problems, color);
}

} // namespace

void scan_options(po::options_description& options)
{
    options.add_options()("json", "print one JSON document (schema passthru.scan/1) and nothing else");
}

int run_scan(Context& ctx, const po::variables_map& vm)
{
    const data::DataDir data(ctx.fs, ctx.global.data_dir);
    const scan::Inventory inv = scan_with_data(ctx, data);
    if (vm.count("json") != 0U) {
        write_scan_json(stdout, inv);
    } else {
        std::fputs(render_human(inv, ctx.color_out).c_str(), stdout);
        if (auto pending = apply::load_pending(ctx.fs); pending && *pending) {
            std::printf("\nPending plan: made %s ago: passthru%s plan %s ('passthru%s apply --dry-run' shows it)\n",
                        apply::age_text((*pending)->created_epoch).c_str(), root_option(ctx).c_str(),
                        request_to_options((*pending)->plan.request).c_str(), root_option(ctx).c_str());
        }
    }
    return exit_code::ok;
}

} // namespace passthru::cli
