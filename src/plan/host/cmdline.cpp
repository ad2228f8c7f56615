// SPDX-License-Identifier: GPL-2.0-or-later
// The kernel command line: which arguments passthrough needs on this CPU and
// kernel, where the boot loader keeps them (its entry in scan/boot_loader.hpp;
// docs/facts.md: boot-loader), and the edits that add them without ever
// duplicating an argument. Each edit style of the table has its planner here:
//
// grub_default (GRUB): a drop-in /etc/default/grub.d/passthru.cfg appends to
// GRUB_CMDLINE_LINUX_DEFAULT (Debian's grub-mkconfig sources grub.d/*.cfg
// after /etc/default/grub). Arguments that must go (amd_iommu=on, an old
// vfio-pci.ids=, a conflicting iommu=) are removed from the file that carries
// them, because a later append cannot take an argument away.
// first_line (systemd-boot): /etc/kernel/cmdline is edited in place and stays one line
// with root= (proxmox-boot-tool reads only the first line and needs root=).
#include <algorithm>
#include <map>
#include <set>

#include "format/grub_default.hpp"
#include "format/kernel_cmdline.hpp"
#include "plan/host/host_detail.hpp"
#include "scan/boot_loader.hpp"
#include "scan/scanner.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

using format::GrubFile;
using format::parse_grub_file;

enum class Match
{
    key,   // any token with the same key is replaced ("iommu=soft" -> "iommu=pt")
    exact, // only the exact token counts; others with the key stay ("video=1024x768")
    list,  // comma-separated list value: merge ("initcall_blacklist=a" -> "initcall_blacklist=a,sysfb_init")
};

struct WantedArg
{
    std::string token;
    Match match = Match::key;
    std::string reason;
};

struct UnwantedArg
{
    std::string token; // exact token, or "key=" prefix when by_key
    bool by_key = false;
    std::string reason;
};

std::string key_of(std::string_view token)
{
    return format::KernelCmdline::key_of(token);
}

std::string value_of(std::string_view token)
{
    const auto eq = token.find('=');
    return eq == std::string_view::npos ? std::string() : std::string(token.substr(eq + 1));
}

void compute_wanted(const PlanContext& ctx, Plan& plan, const HostInputs& in, std::vector<WantedArg>& wanted,
                    std::vector<UnwantedArg>& unwanted)
{
    const auto& host = ctx.inventory.host;
    // The kernel releases are data (profiles/host/kernel.json; docs/facts.md: iommu).
    const data::KernelCutoffs& cut = ctx.inventory.kernel_cutoffs;
    using data::KernelCutoffs;
    if (host.is_intel()) {
        const auto& config = host.intel_iommu_default_on_config;
        if (config) {
            // The kernel's own config wins over its release (docs/facts.md: iommu).
            if (!*config) {
                wanted.push_back({"intel_iommu=on", Match::key,
                                  "turns on the Intel IOMMU (VT-d), which " + scan::intel_iommu_default(ctx.inventory).why
                                      + ": without it the kernel leaves VT-d off"});
            }
        } else if (!KernelCutoffs::at_least(in.kernel_version, cut.intel_iommu_default_on)) {
            wanted.push_back({"intel_iommu=on", Match::key,
                              "turns on the Intel IOMMU (VT-d), which kernels before " + KernelCutoffs::text(cut.intel_iommu_default_on)
                                  + " leave off by default (kernel " + in.kernel_release.value_or("unknown") + ")"});
        } else {
            plan.notes.push_back("no intel_iommu=on: kernel " + in.kernel_release.value_or("?") + " is "
                                 + KernelCutoffs::text(cut.intel_iommu_default_on)
                                 + " or newer, which turns the Intel IOMMU on by default");
        }
    }
    wanted.push_back({"iommu=pt", Match::key,
                      "host-owned devices get identity (pass-through) DMA mappings; devices given to a VM still get their own "
                      "translated IOMMU domain"});
    if (in.boot_vga_selected) {
        const std::string sysfb = KernelCutoffs::text(cut.sysfb_simple_framebuffer);
        if (!in.kernel_version || KernelCutoffs::at_least(in.kernel_version, cut.sysfb_simple_framebuffer)) {
            wanted.push_back({"initcall_blacklist=sysfb_init", Match::list,
                              "keeps the firmware framebuffer off the boot VGA card: since " + sysfb
                                  + " sysfb hands it to simplefb/simpledrm, which video=efifb:off does not stop, and its claim on the "
                                    "card's BAR blocks vfio-pci"});
        } else {
            const std::string fb = host.uefi ? "efifb" : "vesafb";
            wanted.push_back({"video=" + fb + ":off", Match::exact,
                              "keeps " + fb + " (the firmware framebuffer driver of kernels before " + sysfb
                                  + ") off the boot VGA card, whose BAR it would hold"});
        }
    }
    if (in.acs_override) {
        wanted.push_back({"pcie_acs_override=downstream,multifunction", Match::key,
                          "--acs-override: splits IOMMU groups the hardware does not isolate (Proxmox VE kernel patch); "
                          "this weakens isolation between the split devices"});
    }
    unwanted.push_back({"amd_iommu=on", false,
                        "amd_iommu=on is not a kernel option (the kernel logs \"Unknown option\"); AMD-Vi is on whenever the "
                        "firmware provides its IVRS table"});
    unwanted.push_back({"amd_iommu=off", false, "amd_iommu=off turns the AMD IOMMU off, and passthrough needs it"});
    unwanted.push_back({"intel_iommu=off", false, "intel_iommu=off turns the Intel IOMMU off, and passthrough needs it"});
    unwanted.push_back({"vfio_pci.ids", true,
                        "vfio-pci is configured in /etc/modprobe.d/passthru-vfio.conf; an ids list on the command line would "
                        "claim other devices with the same ids (or stale ones) as well"});
}

// A token of a source with where it sits.
struct Source
{
    std::string path;
    std::string label; // "GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub"
    std::vector<std::string> tokens;
};

struct Decision
{
    std::vector<std::string> add;                           // tokens to append
    std::map<std::string, std::string> remove;              // token -> reason
    std::vector<std::pair<std::string, std::string>> added; // token, reason
    std::vector<std::string> already;                       // wanted tokens already present
};

Decision decide(const std::vector<Source>& sources, const std::vector<WantedArg>& wanted, const std::vector<UnwantedArg>& unwanted)
{
    Decision d;
    std::vector<std::string> all;
    for (const auto& s : sources) {
        all.insert(all.end(), s.tokens.begin(), s.tokens.end());
    }
    for (const auto& u : unwanted) {
        for (const auto& t : all) {
            if (u.by_key ? key_of(t) == key_of(u.token) : t == u.token) {
                d.remove.emplace(t, u.reason);
            }
        }
    }
    for (const auto& w : wanted) {
        const std::string key = key_of(w.token);
        switch (w.match) {
        case Match::exact:
            if (std::find(all.begin(), all.end(), w.token) != all.end()) {
                d.already.push_back(w.token);
            } else {
                d.add.push_back(w.token);
                d.added.emplace_back(w.token, w.reason);
            }
            break;
        case Match::key: {
            bool exact = false;
            for (const auto& t : all) {
                if (key_of(t) != key) {
                    continue;
                }
                if (t == w.token && !d.remove.contains(t)) {
                    exact = true;
                } else {
                    d.remove.emplace(t, "replaced by " + w.token);
                }
            }
            if (exact) {
                d.already.push_back(w.token);
            } else {
                d.add.push_back(w.token);
                d.added.emplace_back(w.token, w.reason);
            }
            break;
        }
        case Match::list: {
            const std::string item = value_of(w.token);
            std::vector<std::string> items;
            bool present = false;
            std::vector<std::string> olds;
            for (const auto& t : all) {
                if (key_of(t) != key) {
                    continue;
                }
                olds.push_back(t);
                for (const auto& v : util::split(value_of(t), ",")) {
                    if (std::find(items.begin(), items.end(), v) == items.end()) {
                        items.push_back(v);
                    }
                    present = present || v == item;
                }
            }
            if (present) {
                d.already.push_back(w.token);
                break;
            }
            items.push_back(item);
            const std::string merged = std::string(w.token.substr(0, w.token.find('=') + 1)) + util::join(items, ",");
            for (const auto& t : olds) {
                d.remove.emplace(t, "merged into " + merged);
            }
            d.add.push_back(merged);
            d.added.emplace_back(merged, w.reason);
            break;
        }
        }
    }
    return d;
}

// --- GRUB ------------------------------------------------------------------

bool is_variable_reference(std::string_view token)
{
    return !token.empty() && token.front() == '$';
}

// The GRUB defaults file and the drop-ins, in the order grub-mkconfig
// sources them; `later_dropins` gets those sourced after passthru's.
std::vector<GrubFile> read_grub_files(const PlanContext& ctx, Plan& plan, const scan::BootLoaderSpec& loader,
                                      std::vector<std::string>& later_dropins)
{
    std::vector<GrubFile> files;
    const std::string main_file(loader.cmdline_file);
    if (auto text = read_current(ctx, plan, main_file)) {
        files.push_back(parse_grub_file(main_file, std::move(*text)));
    }
    if (auto names = ctx.fs.list_dir(k_default_grub_d.dir)) {
        std::vector<std::string> sorted = *names;
        std::sort(sorted.begin(), sorted.end());
        for (const auto& name : sorted) {
            const std::string path = k_default_grub_d.file(name);
            if (!name.ends_with(".cfg") || path == k_grub_dropin) {
                continue;
            }
            if (auto text = read_current(ctx, plan, path)) {
                files.push_back(parse_grub_file(path, std::move(*text)));
                if (name > std::string(util::base_name(k_grub_dropin))) {
                    later_dropins.push_back(path);
                }
            }
        }
    }
    return files;
}

// The arguments each assignment carries; an assignment passthru cannot
// parse is refused.
std::vector<Source> grub_sources(const std::vector<GrubFile>& files, Plan& plan)
{
    std::vector<Source> sources;
    for (const auto& f : files) {
        for (const auto& a : f.assignments) {
            if (!a.parsed) {
                plan.refusals.push_back({"cannot parse the " + a.variable + " assignment on line " + std::to_string(a.line + 1) + " of "
                                             + f.path
                                             + " (a quote that does not close on the line, or shell syntax passthru does not edit)",
                                         {"write it as " + a.variable + "=\"...\" on one line and plan again"}});
                continue;
            }
            Source s{f.path, a.variable + " in " + f.path, {}};
            for (auto& t : util::split(a.value, " \t")) {
                if (!is_variable_reference(t)) {
                    s.tokens.push_back(std::move(t));
                }
            }
            sources.push_back(std::move(s));
        }
    }
    return sources;
}

// A later drop-in that sets GRUB_CMDLINE_LINUX_DEFAULT without appending
// would throw our arguments away.
void refuse_overriding_dropins(const std::vector<GrubFile>& files, const std::vector<std::string>& later_dropins, Plan& plan)
{
    for (const auto& path : later_dropins) {
        for (const auto& f : files) {
            if (f.path != path) {
                continue;
            }
            for (const auto& a : f.assignments) {
                if (a.variable == "GRUB_CMDLINE_LINUX_DEFAULT" && a.value.find("$GRUB_CMDLINE_LINUX_DEFAULT") == std::string::npos
                    && a.value.find("${GRUB_CMDLINE_LINUX_DEFAULT}") == std::string::npos) {
                    plan.refusals.push_back(
                        {path + " is sourced after " + std::string(k_grub_dropin)
                             + " and sets GRUB_CMDLINE_LINUX_DEFAULT without appending, so it would drop passthru's arguments",
                         {"make it append (GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT ...\") and plan again"}});
                }
            }
        }
    }
}

// Remove what must go from the files that carry it.
void remove_grub_args(const PlanContext& ctx, Plan& plan, std::vector<GrubFile>& files, const Decision& d)
{
    for (auto& f : files) {
        std::vector<std::string> reasons;
        bool changed = false;
        for (auto& a : f.assignments) {
            std::vector<std::string> kept;
            bool line_changed = false;
            for (auto& t : util::split(a.value, " \t")) {
                if (auto it = d.remove.find(t); it != d.remove.end() && !is_variable_reference(t)) {
                    reasons.push_back("removes " + t + " from " + a.variable + ": " + it->second);
                    line_changed = true;
                    continue;
                }
                kept.push_back(std::move(t));
            }
            if (line_changed) {
                const std::string q = a.quote == 0 ? std::string("\"") : std::string(1, a.quote);
                f.lines[a.line] = a.prefix + q + util::join(kept, " ") + q + a.suffix;
                changed = true;
            }
        }
        if (changed) {
            stage_file(ctx, plan, f.path, f.join(), reasons);
        }
    }
}

// The drop-in carries every argument passthru adds (and goes when none is left).
void stage_grub_dropin(const PlanContext& ctx, Plan& plan, const Decision& d)
{
    std::optional<std::string> dropin;
    std::vector<std::string> reasons;
    if (!d.add.empty()) {
        nlohmann::json args = nlohmann::json::array();
        for (const auto& [token, reason] : d.added) {
            args.push_back({{"token", token}, {"reason", reason}});
            reasons.push_back("adds " + token + ": " + reason);
        }
        auto text = render_or_refuse(ctx, plan, "grub-passthru.cfg.mustache",
                                     {{"vm", ctx.request.vm}, {"args", args}, {"cmdline", util::join(d.add, " ")}});
        if (!text) {
            return;
        }
        dropin = std::move(*text);
    } else {
        reasons.push_back("no longer needed: every argument passthru needs is already on the command line");
    }
    stage_file(ctx, plan, k_grub_dropin, dropin, reasons);
    for (const auto& [token, reason] : d.remove) {
        plan.kernel_args.remove.push_back(token);
    }
    plan.kernel_args.add = d.add;
}

void plan_grub(const PlanContext& ctx, Plan& plan, const scan::BootLoaderSpec& loader, const std::vector<WantedArg>& wanted,
               const std::vector<UnwantedArg>& unwanted)
{
    std::vector<std::string> later_dropins; // after ours in glob order
    std::vector<GrubFile> files = read_grub_files(ctx, plan, loader, later_dropins);
    const std::vector<Source> sources = grub_sources(files, plan);
    refuse_overriding_dropins(files, later_dropins, plan);
    if (plan.refused()) {
        return;
    }
    const Decision d = decide(sources, wanted, unwanted);
    remove_grub_args(ctx, plan, files, d);
    stage_grub_dropin(ctx, plan, d);
}

// --- one-line command-line file (systemd-boot through proxmox-boot-tool) -----

void plan_first_line(const PlanContext& ctx, Plan& plan, const scan::BootLoaderSpec& loader, const std::vector<WantedArg>& wanted,
                     const std::vector<UnwantedArg>& unwanted)
{
    const std::string path(loader.cmdline_file);
    const std::string refresh = util::join(loader.refresh, " ");
    const auto text = read_current(ctx, plan, path);
    if (plan.refused()) {
        return;
    }
    if (!text) {
        plan.refusals.push_back({"this host boots with " + std::string(loader.name) + " (" + ctx.inventory.host.bootloader_evidence
                                     + ") but " + path + " does not exist, so passthru cannot place the kernel arguments",
                                 {"create " + path
                                  + " with the current command line (one line, with root=, e.g. from /proc/cmdline "
                                    "without BOOT_IMAGE= and initrd=), run '"
                                  + refresh + "', and plan again"}});
        return;
    }
    const auto lines = util::split_lines(*text);
    const std::string first = lines.empty() ? std::string() : lines.front();
    format::KernelCmdline cmdline(first);
    if (!cmdline.has_key("root")) {
        plan.refusals.push_back({path + " has no root= argument: " + refresh + " would fail (\"No root= parameter in " + path
                                     + " found!\") and passthru will not guess the root file system",
                                 {"put the root= argument of /proc/cmdline into the first line of " + path + " and plan again"}});
        return;
    }
    const Decision d = decide({Source{path, path, cmdline.tokens()}}, wanted, unwanted);
    std::vector<std::string> reasons;
    std::vector<std::string> tokens;
    for (const auto& t : cmdline.tokens()) {
        if (auto it = d.remove.find(t); it != d.remove.end()) {
            reasons.push_back("removes " + t + ": " + it->second);
            continue;
        }
        tokens.push_back(t);
    }
    for (const auto& [token, reason] : d.added) {
        tokens.push_back(token);
        reasons.push_back("adds " + token + ": " + reason);
    }
    std::size_t extra = 0;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        if (!util::trim(lines[i]).empty()) {
            ++extra;
        }
    }
    if (extra > 0 && (!d.add.empty() || !d.remove.empty())) {
        reasons.push_back("keeps the file to one line: " + loader.refresh.front() + " reads only the first line, so the other "
                          + std::to_string(extra) + " line(s) were ignored anyway");
    }
    std::string after = util::join(tokens, " ") + "\n";
    if (d.add.empty() && d.remove.empty()) {
        return;
    }
    stage_file(ctx, plan, path, after, reasons);
    for (const auto& [token, reason] : d.remove) {
        plan.kernel_args.remove.push_back(token);
    }
    plan.kernel_args.add = d.add;
}

} // namespace

void plan_cmdline(const PlanContext& ctx, Plan& plan, const HostInputs& in)
{
    std::vector<WantedArg> wanted;
    std::vector<UnwantedArg> unwanted;
    compute_wanted(ctx, plan, in, wanted, unwanted);
    const scan::BootLoaderSpec& loader = scan::boot_loader(ctx.inventory.host.bootloader);
    switch (loader.edit) {
    case scan::CmdlineEdit::grub_default:
        plan_grub(ctx, plan, loader, wanted, unwanted);
        break;
    case scan::CmdlineEdit::first_line:
        plan_first_line(ctx, plan, loader, wanted, unwanted);
        break;
    case scan::CmdlineEdit::none: {
        std::vector<std::string> needs;
        for (const auto& spec : scan::boot_loaders()) {
            if (!spec.needs.empty()) {
                needs.emplace_back(spec.needs);
            }
        }
        plan.refusals.push_back({"cannot tell which boot loader this host uses (" + ctx.inventory.host.bootloader_evidence
                                     + "), so passthru cannot place the kernel arguments",
                                 {"run 'proxmox-boot-tool status' and 'efibootmgr -v' on the host; " + util::join(needs, ", ")}});
        break;
    }
    }
    // An ACS override the user set earlier stays, but say so.
    const format::KernelCmdline running(ctx.inventory.host.cmdline.value_or(""));
    if (!in.acs_override && running.has_key("pcie_acs_override")) {
        plan.warnings.push_back("the running command line carries pcie_acs_override=" + running.value("pcie_acs_override").value_or("")
                                + ", which weakens IOMMU isolation; passthru leaves it alone");
    }
}

} // namespace passthru::plan::detail
