// SPDX-License-Identifier: GPL-2.0-or-later
// passthru-vfio.conf for plan_modprobe (modprobe.cpp): the values its template
// (modprobe-vfio.conf.mustache) gets from what the earlier steps decided, each
// checked against its grammar, the trial's command-line arguments, and the reasons.
#include <optional>
#include <string>
#include <vector>

#include "format/grammar.hpp"
#include "plan/host/modprobe_detail.hpp"
#include "scan/boot_loader.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

// --- rendering passthru-vfio.conf --------------------------------------------

// The functions the install hook binds, each with its check that the slot
// still holds the card that was planned for.
nlohmann::json hook_devices(const ModprobeJob& job)
{
    nlohmann::json devices = nlohmann::json::array();
    for (const auto& fn : job.in.functions) {
        const auto* d = job.ctx.inventory.find(fn);
        std::string vendor = d != nullptr && d->vendor ? "0x" + util::hex(*d->vendor, 4) : "";
        std::string device = d != nullptr && d->device ? "0x" + util::hex(*d->device, 4) : "";
        const std::string guard = vendor.empty() || device.empty() ? "[ -e $p ]"
                                                                   : "[ \"$(cat $p/vendor 2>/dev/null):$(cat $p/device 2>/dev/null)\" = \""
                                                                         + vendor + ":" + device + "\" ]";
        devices.push_back({{"bdf", fn.str()}, {"guard", guard}});
    }
    return devices;
}

nlohmann::json softdep_lines(const ModprobeJob& job, std::vector<std::string>& reasons)
{
    nlohmann::json list = nlohmann::json::array();
    std::vector<std::string> names;
    for (const auto& [name, s] : job.softdeps) {
        std::string line = "softdep " + name + " pre: vfio-pci";
        for (const auto& p : s.pre) {
            line += " " + p;
        }
        if (!s.post.empty()) {
            line += " post: " + util::join(s.post, " ");
        }
        list.push_back({{"line", line}, {"why", s.why}});
        names.push_back(name);
    }
    if (!names.empty()) {
        reasons.push_back("softdep ... pre: vfio-pci for " + util::join(names, ", ")
                          + ": whichever of them loads first loads vfio-pci before it, so vfio-pci claims the cards first");
    }
    return list;
}

nlohmann::json blacklist_lines(const ModprobeJob& job, std::vector<std::string>& reasons)
{
    nlohmann::json blacklist = nlohmann::json::array();
    for (const auto& vb : job.vendor_blacklists) {
        const std::string& name = vb.vendor->name;
        if (!vb.blacklist) {
            if (vb.selected) {
                reasons.push_back("does not blacklist " + vb.vendor->drivers + ": " + name + " GPU(s) " + util::join(vb.staying, ", ")
                                  + " stay on the host and need them");
            }
            continue;
        }
        std::vector<std::string> blacklisted;
        for (const auto& driver : job.drivers.drivers) {
            if (driver.blacklist && driver.owner == vb.vendor->id && !job.blacklisted_elsewhere.contains(driver.module)) {
                blacklist.push_back(driver.module);
                blacklisted.push_back(driver.module);
            }
        }
        if (!blacklisted.empty()) {
            reasons.push_back("blacklists " + util::join(blacklisted, ", ") + ": no " + name
                              + " GPU stays on the host; a blacklist only stops loading by device alias, not an explicit "
                                "modprobe or a dependency (modprobe.d(5)), so the softdeps and the vfio-pci binding do the real work");
        }
    }
    return blacklist;
}

// kvm's and vfio_iommu_type1's options: reasons, warnings and notes.
void explain_options(const ModprobeJob& job, std::vector<std::string>& reasons)
{
    const auto& iommu = job.ctx.inventory.host.iommu;
    reasons.push_back("options kvm ignore_msrs=1 report_ignored_msrs=0: guests that touch model-specific registers KVM does not "
                      "emulate (NVIDIA drivers, some Windows tools) keep running instead of getting a fault, without filling the log");
    if (job.want_unsafe_interrupts) {
        reasons.push_back("options vfio_iommu_type1 allow_unsafe_interrupts=1: this host has no interrupt remapping ("
                          + iommu.interrupt_remapping_evidence + "), and vfio refuses to attach a group without it");
        job.plan.warnings.push_back(
            "no interrupt remapping: vfio_iommu_type1 allow_unsafe_interrupts=1 lets a VM's device raise "
            "interrupts the IOMMU cannot check (MSI injection); enable interrupt remapping/x2APIC in the firmware if you can");
    } else if (!iommu.interrupt_remapping) {
        job.plan.notes.push_back(
            "could not tell whether interrupt remapping is available; if a VM fails with \"No interrupt remapping support\", "
            "see 'passthru scan'");
    }
}

// The first value of passthru-vfio.conf that does not match its grammar
// (format/grammar.hpp), as one line; nullopt when all do. Driver and module
// names come from sysfs links under the root: a newline in one must not
// become an `install` line of its own.
std::optional<std::string> invalid_conf_value(const ModprobeJob& job)
{
    using format::Grammar;
    using format::invalid_value;
    for (const auto& [name, s] : job.softdeps) {
        std::vector<std::string> modules{name};
        modules.insert(modules.end(), s.pre.begin(), s.pre.end());
        modules.insert(modules.end(), s.post.begin(), s.post.end());
        for (const auto& m : modules) {
            if (auto bad = invalid_value(Grammar::module_name, m, "the host driver module")) {
                return bad;
            }
        }
    }
    for (const auto& d : job.drivers.drivers) {
        if (auto bad = invalid_value(Grammar::module_name, d.module, "the blacklisted module")) {
            return bad;
        }
    }
    for (const auto& id : job.in.vfio_ids) {
        if (auto bad = invalid_value(Grammar::pci_id, id, "the device id")) {
            return bad;
        }
    }
    for (const auto& fn : job.in.functions) {
        if (auto bad = invalid_value(Grammar::pci_address, fn.str(), "the device address")) {
            return bad;
        }
    }
    return std::nullopt;
}

// The trial's binding arguments: modprobe (libkmod) reads options and
// blacklists for modules from /proc/cmdline (docs/facts.md: trial-boot).
void trial_binding(ModprobeJob& job, const nlohmann::json& blacklist, std::vector<std::string>& reasons)
{
    if (!job.by_address) {
        job.plan.trial_args.push_back("vfio_pci.ids=" + util::join(job.in.vfio_ids, ","));
    }
    std::vector<std::string> modules;
    for (const auto& m : blacklist) {
        modules.push_back(m.get<std::string>());
    }
    if (!modules.empty()) {
        job.plan.trial_args.push_back("modprobe.blacklist=" + util::join(modules, ","));
    }
    reasons.push_back(std::string("trial: ")
                      + (job.by_address ? "the install hook binds only when " + std::string(scan::k_trial_marker)
                                              + " is on /proc/cmdline, and otherwise just loads vfio-pci"
                                        : "no ids= line; vfio_pci.ids= is on the trial entry's command line")
                      + (modules.empty() ? "" : "; the blacklist is modprobe.blacklist= on that command line"));
}

} // namespace

// passthru-vfio.conf from its template, staged with its reasons.
void render_modprobe_conf(ModprobeJob& job)
{
    if (auto bad = invalid_conf_value(job)) {
        job.plan.refusals.push_back({"will not write " + std::string(k_modprobe_conf) + ": " + *bad,
                                     {"the value comes from the host (sysfs under the root, or the data files); "
                                      "fix its source, then run 'passthru scan' to check"}});
        return;
    }
    std::vector<std::string> reasons{job.binding_reason};
    reasons.insert(reasons.end(), job.kernel_driver_reasons.begin(), job.kernel_driver_reasons.end());
    nlohmann::json devices = hook_devices(job);
    nlohmann::json softdeps = softdep_lines(job, reasons);
    nlohmann::json blacklist = blacklist_lines(job, reasons);
    explain_options(job, reasons);
    // A trial binds only on the trial entry's boot (plan/trial.hpp): the ids
    // and the blacklist go on its command line, the hook checks the marker.
    const bool trial = job.ctx.request.trial_minutes.has_value();
    if (trial) {
        trial_binding(job, blacklist, reasons);
    }
    std::vector<std::string> gpu_labels;
    gpu_labels.reserve(job.plan.gpus.size());
    for (const auto& g : job.plan.gpus) {
        gpu_labels.push_back(g.slot + (g.name.empty() ? "" : " " + g.name));
    }
    const nlohmann::json values{
        {"vm", job.ctx.request.vm},
        {"gpus", util::join(gpu_labels, ", ")},
        {"by_ids", !job.by_address},
        {"by_address", job.by_address},
        {"ids", util::join(job.in.vfio_ids, ",")},
        {"binding_reason", job.binding_reason},
        {"binding_why", job.binding_why},
        {"devices", devices},
        {"softdeps", softdeps},
        {"has_softdeps", !softdeps.empty()},
        {"blacklist", blacklist},
        {"has_blacklist", !blacklist.empty()},
        {"unsafe_interrupts", job.want_unsafe_interrupts},
        {"trial", trial},
        {"marker", scan::k_trial_marker},
    };
    auto text = render_or_refuse(job.ctx, job.plan, "modprobe-vfio.conf.mustache", values);
    if (!text) {
        return;
    }
    stage_file(job.ctx, job.plan, k_modprobe_conf, *text, reasons);
}

} // namespace passthru::plan::detail
