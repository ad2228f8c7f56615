// SPDX-License-Identifier: GPL-2.0-or-later
// The other modprobe.d files of plan_modprobe (modprobe.cpp): the host's
// configuration as libkmod reads it, and the lines in it that would fight
// passthru-vfio.conf, fixed in /etc/modprobe.d and reported elsewhere
// (docs/facts.md: modprobe-config).
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "format/modprobe_d.hpp"
#include "plan/host/modprobe_config.hpp"
#include "plan/host/modprobe_detail.hpp"
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
// it, and it is worth a warning when a GPU of the driver's vendor stays on the host.
void note_blacklist(ModprobeJob& job, const std::string& path, const std::string& module)
{
    const std::string mod = module_key(module);
    const auto* listed = blacklist_entry(job.drivers, mod);
    if (listed == nullptr) {
        return;
    }
    job.blacklisted_elsewhere.insert(mod);
    if (listed->framebuffer) {
        return;
    }
    for (const auto& vb : job.vendor_blacklists) {
        if (vb.vendor->id == listed->owner && !vb.staying.empty()) {
            job.plan.warnings.push_back(path + " blacklists " + module + " although " + vb.vendor->name + " GPU(s) "
                                        + util::join(vb.staying, ", ") + " stay on the host; passthru leaves it alone");
        }
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

} // namespace

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

} // namespace passthru::plan::detail
