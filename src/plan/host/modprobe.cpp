// SPDX-License-Identifier: GPL-2.0-or-later
// /etc/modprobe.d/passthru-vfio.conf: how vfio-pci claims the cards, the
// softdeps that load it before any host driver, the NVIDIA blacklist when no
// NVIDIA GPU stays on the host, kvm and vfio_iommu_type1 options. Lines of
// other modprobe.d files that would fight it are fixed in place; the host's
// configuration is read by libkmod (docs/facts.md: modules, modprobe-config).
//
// Binding. By id (`options vfio-pci ids=...`) only when no device that stays
// on the host has one of the ids: vfio-pci claims every device with a listed
// id. Otherwise by address: an `install vfio-pci` hook sets driver_override
// on exactly the selected functions (after checking that the slot still holds
// the same vendor:device), unbinds a function a host driver already holds,
// loads vfio-pci with `modprobe --ignore-install`, and asks the kernel to
// probe the functions. The hook runs wherever vfio-pci is loaded through
// modprobe: from the initramfs module list, from modules-load.d, and before
// every host driver named in a softdep (kmod runs the install command of a
// softdep module too). It lives in modprobe.d, which mkinitramfs copies into
// the initramfs, so no extra hook script is needed. A udev rule was not
// chosen: the initramfs does not carry /etc/udev/rules.d, and a driver that
// is already loaded binds a device before udev sees it.
#include <algorithm>
#include <map>
#include <set>

#include "format/grammar.hpp"
#include "format/modprobe_d.hpp"
#include "plan/host/common.hpp"
#include "plan/host/drivers.hpp"
#include "plan/host/modprobe_config.hpp"
#include "scan/boot_loader.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

bool looks_like_id_list(std::string_view word)
{
    // "10de:10f8," or "10de:10f8": the tail of an ids= list split by a space.
    if (word.empty() || word.find('=') != std::string_view::npos) {
        return false;
    }
    return std::all_of(word.begin(), word.end(),
                       [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == ','; })
           && word.find(':') != std::string_view::npos;
}

// Parameters passthru owns, per module.
bool owned_param(const std::string& module, std::string_view param)
{
    const std::string key = module_key(param.substr(0, param.find('=')));
    if (module == "vfio_pci") {
        return key == "ids" || looks_like_id_list(param);
    }
    if (module == "kvm") {
        return key == "ignore_msrs" || key == "report_ignored_msrs";
    }
    if (module == "vfio_iommu_type1") {
        return key == "allow_unsafe_interrupts";
    }
    return false;
}

struct Softdep
{
    std::string module;
    std::vector<std::string> pre; // after vfio-pci
    std::vector<std::string> post;
    std::string why;
};

// The module that provides a PCI driver, from /sys/bus/pci/drivers/<drv>/module,
// else from the data's driver_modules.
std::string driver_module(const util::HostFs& fs, const HostDriverData& drivers, const std::string& driver)
{
    if (auto link = fs.read_link("/sys/bus/pci/drivers/" + driver + "/module")) {
        return module_key(util::base_name(*link));
    }
    if (auto it = drivers.driver_modules.find(driver); it != drivers.driver_modules.end()) {
        return it->second;
    }
    return module_key(driver);
}

// The data's entry for a module it blacklists, or nullptr.
const HostDriver* blacklist_entry(const HostDriverData& drivers, const std::string& module)
{
    for (const auto& d : drivers.drivers) {
        if (d.blacklist && d.module == module) {
            return &d;
        }
    }
    return nullptr;
}

// What the steps of plan_modprobe share: the request, the host's drivers,
// and what the earlier steps decided.
struct ModprobeJob
{
    ModprobeJob(const PlanContext& c, Plan& p, const HostInputs& i, const HostDriverData& d) : ctx(c), plan(p), in(i), drivers(d) {}

    const PlanContext& ctx;
    Plan& plan;
    const HostInputs& in;
    const HostDriverData& drivers;
    // drivers that count only on this kernel (nova_core), and why
    std::vector<std::string> kernel_driver_reasons;
    // binding
    bool by_address = false;
    std::string binding_why;
    std::string binding_reason;
    // softdeps, by module
    std::map<std::string, Softdep> softdeps;
    // blacklist
    bool nvidia_selected = false;
    std::vector<std::string> nvidia_staying;
    bool blacklist_nvidia = false;
    std::set<std::string> blacklisted_elsewhere;
    bool want_unsafe_interrupts = false;
    // NVIDIA vGPU host: the drivers kept loaded for it (vgpu_keep) that would have had a softdep
    std::vector<std::string> vgpu_kept;
};

bool vgpu_host(const ModprobeJob& job)
{
    return job.ctx.inventory.host.vgpu_host();
}

// A vgpu_keep driver of the data: on a vGPU host it gets no softdep or blacklist.
bool vgpu_kept(const ModprobeJob& job, const std::string& module)
{
    return vgpu_host(job) && std::any_of(job.drivers.drivers.begin(), job.drivers.drivers.end(), [&](const HostDriver& d) {
               return d.vgpu_keep && d.module == module_key(module);
           });
}

// --- binding: ids when no identical device stays, else by address ----------

// Why ids= cannot bind the selected functions; empty when it can.
std::string ids_obstacle(const ModprobeJob& job)
{
    const auto& inv = job.ctx.inventory;
    const std::set<scan::PciAddress> selected(job.in.functions.begin(), job.in.functions.end());
    std::vector<std::string> collisions;
    bool unknown_id = false;
    for (const auto& fn : job.in.functions) {
        const auto* d = inv.find(fn);
        if (d == nullptr || d->vendor_device().empty()) {
            unknown_id = true;
        }
    }
    for (const auto& d : inv.devices) {
        if (selected.contains(d.address) || d.vendor_device().empty()) {
            continue;
        }
        if (std::binary_search(job.in.vfio_ids.begin(), job.in.vfio_ids.end(), d.vendor_device())) {
            collisions.push_back(describe_device(inv, d.address));
        }
    }
    // A selected function held by a built-in driver: ids= cannot take it away.
    std::vector<std::string> builtin_held;
    for (const auto& fn : job.in.functions) {
        const auto* d = inv.find(fn);
        if (d != nullptr && d->driver && *d->driver != "vfio-pci") {
            const auto mod = driver_module(job.ctx.fs, job.drivers, *d->driver);
            if (target_module_builtin(job.ctx.fs, job.in.kernel_release.value_or(""), mod) == true) {
                builtin_held.push_back(fn.str() + " (" + *d->driver + ", built into the kernel)");
            }
        }
    }
    if (!collisions.empty()) {
        return "devices with the same vendor:device ids stay on the host (" + util::join(collisions, "; ")
               + "), and ids= would claim them too";
    }
    if (unknown_id) {
        return "a selected function has no readable vendor:device id";
    }
    if (!builtin_held.empty()) {
        return "a built-in driver holds " + util::join(builtin_held, ", ")
               + " before vfio-pci loads, and ids= never takes a device from its driver";
    }
    return {};
}

void choose_binding(ModprobeJob& job)
{
    job.binding_why = ids_obstacle(job);
    if (job.binding_why.empty() && vgpu_host(job)) {
        job.binding_why = "this host serves vGPUs, so its GPU driver stays loaded with no softdep to order vfio-pci "
                          "before it, and ids= never takes a device from a driver that holds it";
    }
    job.by_address = !job.binding_why.empty();
    job.plan.binding = job.by_address ? "address" : "ids";
    if (job.by_address) {
        job.binding_reason = "binds by address (driver_override for " + std::to_string(job.in.functions.size())
                             + " functions, from an install command for vfio-pci), not by ids=: " + job.binding_why;
    } else {
        job.binding_reason = "binds by id: ids=" + util::join(job.in.vfio_ids, ",")
                             + " (comma-separated, no spaces) lists every function of the "
                               "selected cards, and no device that stays on the host has one of these ids";
    }
}

// --- softdeps: every loadable host driver that could claim a function -------

void choose_softdeps(ModprobeJob& job)
{
    auto want_softdep = [&](const std::string& module, const std::string& why) {
        if (vgpu_kept(job, module)) {
            if (std::find(job.vgpu_kept.begin(), job.vgpu_kept.end(), module_key(module)) == job.vgpu_kept.end()) {
                job.vgpu_kept.push_back(module_key(module));
            }
            return;
        }
        auto& s = job.softdeps[module];
        s.module = module;
        if (s.why.empty()) {
            s.why = why;
        }
    };
    for (const auto& fn : job.in.functions) {
        const auto* d = job.ctx.inventory.find(fn);
        if (d == nullptr) {
            continue;
        }
        for (const auto& driver : job.drivers.drivers) {
            if (driver.claims(*d)) {
                want_softdep(driver.module, driver.reason(fn.str()));
            }
        }
        if (d->driver && *d->driver != "vfio-pci" && *d->driver != "pci-stub") {
            want_softdep(driver_module(job.ctx.fs, job.drivers, *d->driver), "currently bound to " + fn.str());
        }
    }
    std::vector<std::string> builtin_softdeps;
    for (auto it = job.softdeps.begin(); it != job.softdeps.end();) {
        if (target_module_builtin(job.ctx.fs, job.in.kernel_release.value_or(""), it->first) == true) {
            builtin_softdeps.push_back(it->first);
            it = job.softdeps.erase(it);
        } else {
            ++it;
        }
    }
    if (!builtin_softdeps.empty()) {
        job.plan.notes.push_back("no softdep for " + util::join(builtin_softdeps, ", ") + ": built into kernel "
                                 + job.in.kernel_release.value_or("?") + ", never loaded as a module");
    }
}

// --- blacklist: the NVIDIA drivers only when no NVIDIA GPU stays on the host -

void choose_blacklist(ModprobeJob& job)
{
    const auto& selected = job.ctx.selected;
    for (const auto& card : job.ctx.inventory.gpus) {
        if (!card.is_nvidia()) {
            continue;
        }
        if (std::find(selected.begin(), selected.end(), &card) != selected.end()) {
            job.nvidia_selected = true;
        } else {
            job.nvidia_staying.push_back(card.slot);
        }
    }
    job.blacklist_nvidia = job.nvidia_selected && job.nvidia_staying.empty() && !vgpu_host(job);
    if (vgpu_host(job)) {
        const auto& host = job.ctx.inventory.host;
        job.plan.notes.push_back("NVIDIA vGPU host (" + util::join(host.vgpu_evidence, "; ") + "): passthru keeps the nvidia driver"
                                 + (job.vgpu_kept.empty() ? std::string() : " (no softdep for " + util::join(job.vgpu_kept, ", ") + ")")
                                 + " and blacklists no NVIDIA driver, because the vGPU manager needs nvidia loaded for the GPUs that "
                                   "serve vGPUs to other VMs; the selected cards are bound to vfio-pci by address instead");
        if (job.nvidia_staying.empty() && job.nvidia_selected) {
            job.plan.warnings.push_back("every NVIDIA GPU of this vGPU host goes to VM " + job.ctx.request.vm
                                        + ": no GPU is left to serve vGPUs; stop the vGPU manager (nvidia-vgpu-mgr) if that is meant");
        }
    }
}

// --- other modprobe.d files: fix what would fight passthru's file ------------

// Why passthru must not edit a modprobe.d file; empty when it may. passthru
// edits only /etc/modprobe.d, and there never Proxmox VE's own file
// (docs/facts.md: modprobe-config).
std::string not_ours_why(const std::string& path)
{
    const std::string name(util::base_name(path));
    if (k_modprobe_d.contains(path)) {
        return name == "pve-blacklist.conf" ? "Proxmox VE owns it (pve-manager)" : "";
    }
    if (name.find("proxmox") != std::string::npos) {
        return "Proxmox VE's kernel package owns it";
    }
    if (path.starts_with("/run/")) {
        return "it is generated at run time";
    }
    return "it belongs to a package, and passthru edits only /etc/modprobe.d";
}

// The edits of one file and their reasons.
struct FileEdits
{
    std::vector<std::string> reasons;
    std::vector<format::ModprobeEdit> edits;

    void set(const format::ModprobeLine& l, std::optional<std::string> text) { edits.push_back({l.first, l.last, std::move(text)}); }
};

// `options` of vfio-pci, kvm or vfio_iommu_type1 whose parameters passthru owns.
void fix_options_line(const ModprobeJob& job, const format::ModprobeLine& l, const std::string& mod, FileEdits& edits)
{
    const auto& w = l.words;
    std::vector<std::string> kept;
    std::vector<std::string> dropped;
    for (std::size_t i = 2; i < w.size(); ++i) {
        (owned_param(mod, w[i]) ? dropped : kept).push_back(w[i]);
    }
    if (dropped.empty() || (mod == "vfio_iommu_type1" && job.want_unsafe_interrupts)) {
        return; // nothing of passthru's, or what passthru would write anyway
    }
    std::string why;
    if (mod == "vfio_pci") {
        const bool split = std::any_of(dropped.begin(), dropped.end(),
                                       [](const std::string& p) { return looks_like_id_list(p) || (!p.empty() && p.back() == ','); });
        why = split ? "its ids list is split by a space, so vfio-pci only ever got the first id, and the rest was "
                      "ignored as an unknown parameter; "
                    : "";
        why += job.by_address ? "an ids list would claim devices that stay on the host; passthru binds by address"
                              : "passthru-vfio.conf now carries the complete ids list (a second ids= would override it)";
    } else if (mod == "kvm") {
        why = "passthru-vfio.conf sets ignore_msrs=1 report_ignored_msrs=0 for kvm";
    } else {
        why = "interrupt remapping is available, so allow_unsafe_interrupts only weakens isolation";
    }
    edits.reasons.push_back((kept.empty() ? "removes '" : "drops " + util::join(dropped, " ") + " from '") + util::join(w, " ")
                            + "': " + why);
    edits.set(l, kept.empty() ? std::nullopt : std::optional<std::string>("options " + w[1] + " " + util::join(kept, " ")));
}

// A softdep of a module passthru gives one: kmod uses only the first softdep
// line of a module, so it is merged into passthru's and removed here.
void merge_softdep_line(ModprobeJob& job, const format::ModprobeLine& l, const std::string& mod, FileEdits& edits)
{
    const auto& w = l.words;
    auto& s = job.softdeps[mod];
    std::vector<std::string>* target = nullptr;
    for (std::size_t i = 2; i < w.size(); ++i) {
        if (w[i] == "pre:") {
            target = &s.pre;
        } else if (w[i] == "post:") {
            target = &s.post;
        } else if (target != nullptr && module_key(w[i]) != "vfio_pci"
                   && std::find(target->begin(), target->end(), w[i]) == target->end()) {
            target->push_back(w[i]);
        }
    }
    edits.reasons.push_back("removes '" + util::join(w, " ")
                            + "': merged into passthru-vfio.conf (kmod uses only the "
                              "first softdep line of a module)");
    edits.set(l, std::nullopt);
}

// The edits one located directive needs, if any.
void fix_conf_line(ModprobeJob& job, ModprobeKind kind, const format::ModprobeLine& l, FileEdits& edits)
{
    const auto& w = l.words;
    const std::string mod = module_key(w[1]);
    if (kind == ModprobeKind::options && (mod == "vfio_pci" || mod == "kvm" || mod == "vfio_iommu_type1")) {
        fix_options_line(job, l, mod, edits);
    } else if (kind == ModprobeKind::softdep && job.softdeps.contains(mod)) {
        merge_softdep_line(job, l, mod, edits);
    } else if (kind == ModprobeKind::install && mod == "vfio_pci") {
        edits.reasons.push_back("removes an older 'install vfio-pci' command: kmod runs only one install command per module, "
                                "and passthru-vfio.conf decides how vfio-pci claims the cards");
        edits.set(l, std::nullopt);
    }
}

// A blacklist libkmod found in another file: passthru's file need not repeat
// it, and it is worth a warning when an NVIDIA GPU stays on the host.
void note_blacklist(ModprobeJob& job, const std::string& path, const std::string& module)
{
    const std::string mod = module_key(module);
    const auto* listed = blacklist_entry(job.drivers, mod);
    if (listed == nullptr) {
        return;
    }
    job.blacklisted_elsewhere.insert(mod);
    if (!job.nvidia_staying.empty() && !listed->framebuffer) {
        job.plan.warnings.push_back(path + " blacklists " + module + " although NVIDIA GPU(s) " + util::join(job.nvidia_staying, ", ")
                                    + " stay on the host; passthru leaves it alone");
    }
}

// The modprobe.d command word of a directive libkmod reported, and the words
// that must follow the module name on its line (nullopt: any).
struct Locator
{
    const char* command;
    std::optional<std::vector<std::string>> value;
};

std::optional<Locator> locator(const ModprobeDirective& d)
{
    switch (d.kind) {
    case ModprobeKind::options:
        return Locator{"options", util::split(d.value, " \t")};
    case ModprobeKind::install:
        return Locator{"install", util::split(d.value, " \t")};
    case ModprobeKind::softdep:
        return Locator{"softdep", std::nullopt}; // kmod reports the lists regrouped
    case ModprobeKind::blacklist:                // decided from libkmod's report alone, never edited
    case ModprobeKind::alias:
        return std::nullopt;
    }
    return std::nullopt;
}

// Whether passthru may have to change a directive of another file.
bool may_concern(const ModprobeJob& job, const ModprobeDirective& d)
{
    const std::string mod = module_key(d.module);
    switch (d.kind) {
    case ModprobeKind::options:
        return mod == "vfio_pci" || mod == "kvm" || mod == "vfio_iommu_type1";
    case ModprobeKind::install:
        return mod == "vfio_pci";
    case ModprobeKind::softdep:
        return job.softdeps.contains(mod);
    case ModprobeKind::blacklist:
    case ModprobeKind::alias:
        return false;
    }
    return false;
}

// The lines of a file that carry the directives libkmod found in it that may
// concern passthru, in the file's order (a line that carries two equal
// directives counts once). A directive whose line cannot be told is reported.
std::vector<std::pair<ModprobeKind, format::ModprobeLine>> locate(ModprobeJob& job, const ModprobeFile& file, const std::string& content)
{
    std::map<std::size_t, std::pair<ModprobeKind, format::ModprobeLine>> by_line;
    for (const auto& d : file.directives) {
        const auto loc = locator(d);
        if (!loc || !may_concern(job, d)) {
            continue;
        }
        auto lines = format::find_modprobe_lines(content, loc->command, d.module, loc->value);
        if (lines.empty()) {
            job.plan.warnings.push_back("libkmod reads '" + std::string(loc->command) + " " + d.module + " " + d.value + "' from "
                                        + file.path + ", but passthru cannot tell its line; check that file by hand");
        }
        for (auto& l : lines) {
            const auto line_no = l.first; // read before l is moved into the pair
            by_line.emplace(line_no, std::make_pair(d.kind, std::move(l)));
        }
    }
    std::vector<std::pair<ModprobeKind, format::ModprobeLine>> out;
    out.reserve(by_line.size());
    for (auto& [first, hit] : by_line) {
        out.push_back(std::move(hit));
    }
    return out;
}

void fix_conf_file(ModprobeJob& job, const ModprobeFile& file)
{
    if (file.directives.empty()) {
        // Nothing in it can fight passthru-vfio.conf: an empty file, or a
        // mask (a link to /dev/null, kmod's way to switch a packaged file
        // off), which is left as it is rather than refused as a symlink.
        return;
    }
    const std::string& path = file.path;
    const auto content = read_current(job.ctx, job.plan, path);
    if (!content) {
        return;
    }
    for (const auto& d : file.directives) {
        if (d.kind == ModprobeKind::blacklist) {
            note_blacklist(job, path, d.module);
        }
    }
    FileEdits edits;
    for (const auto& [kind, line] : locate(job, file, *content)) {
        fix_conf_line(job, kind, line, edits);
    }
    if (edits.edits.empty()) {
        return;
    }
    if (const auto why = not_ours_why(path); !why.empty()) {
        for (const auto& reason : edits.reasons) {
            job.plan.warnings.push_back(path + " is left alone (" + why + "), but needs this change, made by hand: " + reason);
        }
        return;
    }
    auto after = format::edit_modprobe_lines(*content, edits.edits);
    if (!after) {
        edits.reasons.push_back("deletes the file: nothing but comments would be left");
    }
    stage_file(job.ctx, job.plan, path, after, edits.reasons);
}

// The host's effective modprobe.d configuration (libkmod), every file but
// passthru's own: lines that would fight passthru-vfio.conf are fixed in
// /etc/modprobe.d and reported elsewhere.
void fix_other_files(ModprobeJob& job)
{
    for (const auto& file : read_modprobe_config(job.ctx.fs)) {
        if (file.path != k_modprobe_conf) {
            fix_conf_file(job, file);
        }
    }
}

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
    if (!job.blacklist_nvidia) {
        if (job.nvidia_selected) {
            reasons.push_back("does not blacklist nouveau/nvidia: NVIDIA GPU(s) " + util::join(job.nvidia_staying, ", ")
                              + " stay on the host and need them");
        }
        return blacklist;
    }
    std::vector<std::string> blacklisted;
    for (const auto& driver : job.drivers.drivers) {
        if (driver.blacklist && !job.blacklisted_elsewhere.contains(driver.module)) {
            blacklist.push_back(driver.module);
            blacklisted.push_back(driver.module);
        }
    }
    if (!blacklisted.empty()) {
        reasons.push_back("blacklists " + util::join(blacklisted, ", ")
                          + ": no NVIDIA GPU stays on the host; a blacklist only stops loading by device alias, not an explicit "
                            "modprobe or a dependency (modprobe.d(5)), so the softdeps and the vfio-pci binding do the real work");
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

} // namespace

void plan_modprobe(const PlanContext& ctx, Plan& plan, const HostInputs& in)
{
    const auto loaded = load_host_drivers(ctx.data);
    if (!loaded) {
        throw loaded.error();
    }
    // Drivers that exist only in newer kernels (nova_core) count where the target has them.
    std::vector<std::string> kernel_driver_reasons;
    const HostDriverData drivers = drivers_for_kernel(ctx.fs, in.kernel_release, in.kernel_version, *loaded, kernel_driver_reasons);
    ModprobeJob job(ctx, plan, in, drivers);
    job.kernel_driver_reasons = std::move(kernel_driver_reasons);
    job.want_unsafe_interrupts = ctx.inventory.host.iommu.interrupt_remapping == false;
    choose_binding(job);
    choose_softdeps(job);
    choose_blacklist(job);
    fix_other_files(job);
    render_modprobe_conf(job);
}

} // namespace passthru::plan::detail
