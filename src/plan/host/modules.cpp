// SPDX-License-Identifier: GPL-2.0-or-later
// Module lists: /etc/modules-load.d/vfio.conf (systemd-modules-load), the
// initramfs list /etc/initramfs-tools/modules (so vfio-pci is there before
// the host drivers), and old vfio_virqfd lines where the kernel no longer
// has that module (docs/facts.md: modules).
#include <algorithm>
#include <set>

#include "plan/host/host_detail.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

// The module a modules-load.d / initramfs-tools line names (first word), or "".
std::string line_module(std::string_view line)
{
    const auto t = util::trim(line);
    if (t.empty() || t.front() == '#' || t.front() == ';') {
        return "";
    }
    const auto end = t.find_first_of(" \t");
    return module_key(t.substr(0, end));
}

struct VirqfdDecision
{
    bool needed = false;
    std::string reason;
};

// Before the release in profiles/host/kernel.json (docs/facts.md: modules), and
// only when libkmod cannot tell from the target kernel's module tree.
bool before_virqfd_fold(const PlanContext& ctx, const HostInputs& in)
{
    return in.kernel_version && !data::KernelCutoffs::at_least(in.kernel_version, ctx.inventory.kernel_cutoffs.vfio_virqfd_in_vfio);
}

// A kernel other than the target that a boot entry can also start and whose module tree
// has no vfio_virqfd (folded into vfio): a listed vfio_virqfd would fail systemd-modules-load
// there, while on the target vfio-pci still loads it through its module dependency
// (modules.dep; docs/facts.md: modules).
VirqfdDecision unless_folded_elsewhere(const PlanContext& ctx, const std::string& kver, VirqfdDecision target)
{
    for (const auto& other : ctx.inventory.host.bootable_kernels) {
        if (other == kver) {
            continue;
        }
        if (const auto has = target_has_module(ctx.fs, other, "vfio_virqfd"); has && !*has) {
            return {false, "kernel " + other + ", which a boot entry can also start, has no vfio_virqfd (asked through libkmod): "
                               + "listed, it would make systemd-modules-load fail there; on kernel " + kver
                               + " vfio-pci loads it as its dependency"};
        }
    }
    return target;
}

VirqfdDecision decide_virqfd(const PlanContext& ctx, const HostInputs& in)
{
    const std::string kver = in.kernel_release.value_or("");
    const std::string fold = data::KernelCutoffs::text(ctx.inventory.kernel_cutoffs.vfio_virqfd_in_vfio);
    if (const auto has = target_has_module(ctx.fs, kver, "vfio_virqfd")) {
        if (*has) {
            return unless_folded_elsewhere(ctx, kver,
                                           {true, "the module tree of kernel " + kver + " still has vfio_virqfd (asked through libkmod)"});
        }
        return {false, "the module tree of kernel " + kver + " has no vfio_virqfd (asked through libkmod): since Linux " + fold
                           + " it is part of vfio"};
    }
    if (before_virqfd_fold(ctx, in)) {
        return unless_folded_elsewhere(
            ctx, kver, {true, "kernel " + kver + " is older than " + fold + ", where vfio_virqfd is still a module of its own"});
    }
    return {false, "kernel " + (kver.empty() ? std::string("(unknown)") : kver)
                       + (in.kernel_version ? " is " + fold + " or newer" : std::string(" is assumed current"))
                       + ": vfio_virqfd was folded into vfio in Linux " + fold + ", and listing it only makes systemd-modules-load fail"};
}

// Removes vfio_virqfd lines from a module list file.
void drop_virqfd(const PlanContext& ctx, Plan& plan, const std::string& path, const VirqfdDecision& virqfd)
{
    const auto text = read_current(ctx, plan, path);
    if (!text) {
        return;
    }
    const auto lines = util::split_lines(*text);
    std::string after;
    bool changed = false;
    for (const auto& line : lines) {
        if (line_module(line) == "vfio_virqfd") {
            changed = true;
            continue;
        }
        after += line + "\n";
    }
    if (!changed) {
        return;
    }
    if (!text->empty() && text->back() != '\n' && !after.empty()) {
        after.pop_back();
    }
    stage_file(ctx, plan, path, after, {"removes vfio_virqfd: " + virqfd.reason});
}

// /etc/initramfs-tools/modules: append what is missing, keep the rest
// (vfio_virqfd goes when the kernel no longer has it). False when the
// template cannot be rendered (a refusal says why).
bool plan_initramfs_modules(const PlanContext& ctx, Plan& plan, const std::vector<std::string>& modules, const VirqfdDecision& virqfd)
{
    const std::string path(k_initramfs_modules);
    const auto current = read_current(ctx, plan, path);
    std::set<std::string> present;
    std::string after;
    bool removed_virqfd = false;
    if (current) {
        for (const auto& line : util::split_lines(*current)) {
            const auto m = line_module(line);
            if (m == "vfio_virqfd" && !virqfd.needed) {
                removed_virqfd = true;
                continue;
            }
            if (!m.empty()) {
                present.insert(m);
            }
            after += line + "\n";
        }
        if (!removed_virqfd) {
            after = *current;
        }
    }
    std::vector<std::string> missing;
    for (const auto& m : modules) {
        if (!present.contains(module_key(m))) {
            missing.push_back(m);
        }
    }
    std::vector<std::string> init_reasons;
    if (removed_virqfd) {
        init_reasons.push_back("removes vfio_virqfd: " + virqfd.reason);
    }
    if (!missing.empty()) {
        auto block = render_or_refuse(ctx, plan, "initramfs-modules.mustache", {{"vm", ctx.request.vm}, {"modules", missing}});
        if (!block) {
            return false;
        }
        if (!after.empty() && after.back() != '\n') {
            after += '\n';
        }
        after += *block;
        init_reasons.push_back("adds " + util::join(missing, ", ")
                               + " to the initramfs so vfio-pci is loaded before the host drivers can claim the cards "
                                 "(the other lines stay as they are)");
    }
    if (!init_reasons.empty()) {
        stage_file(ctx, plan, path, after, init_reasons);
    }
    return true;
}

// Old guides put vfio_virqfd into /etc/modules or another modules-load.d file.
void drop_stale_virqfd(const PlanContext& ctx, Plan& plan, const VirqfdDecision& virqfd)
{
    if (ctx.fs.stat(k_modules).type == util::FileType::regular) {
        drop_virqfd(ctx, plan, std::string(k_modules), virqfd);
    }
    if (auto names = ctx.fs.list_dir(k_modules_load_d.dir)) {
        std::vector<std::string> sorted = *names;
        std::sort(sorted.begin(), sorted.end());
        for (const auto& name : sorted) {
            const std::string path = k_modules_load_d.file(name);
            if (name.ends_with(".conf") && path != k_modules_load_conf && ctx.fs.stat(path).type == util::FileType::regular) {
                drop_virqfd(ctx, plan, path, virqfd);
            }
        }
    }
}

} // namespace

void plan_modules(const PlanContext& ctx, Plan& plan, const HostInputs& in)
{
    const VirqfdDecision virqfd = decide_virqfd(ctx, in);
    std::vector<std::string> modules{"vfio", "vfio_iommu_type1", "vfio_pci"};
    if (virqfd.needed) {
        modules.emplace_back("vfio_virqfd");
    }

    // /etc/modules-load.d/vfio.conf
    nlohmann::json values{{"vm", ctx.request.vm}, {"modules", modules}, {"virqfd", virqfd.needed}, {"virqfd_reason", virqfd.reason}};
    auto text = render_or_refuse(ctx, plan, "modules-load-vfio.conf.mustache", values);
    if (!text) {
        return;
    }
    std::vector<std::string> reasons{"loads " + util::join(modules, ", ")
                                     + " at every boot (systemd-modules-load), so /dev/vfio exists before any VM starts"};
    reasons.push_back(virqfd.needed ? "includes vfio_virqfd: " + virqfd.reason : "leaves out vfio_virqfd: " + virqfd.reason);
    stage_file(ctx, plan, k_modules_load_conf, *text, reasons);

    if (!plan_initramfs_modules(ctx, plan, modules, virqfd)) {
        return;
    }
    if (!virqfd.needed) {
        drop_stale_virqfd(ctx, plan, virqfd);
    }
    if (virqfd.needed && before_virqfd_fold(ctx, in)) {
        plan.notes.push_back("vfio_virqfd is listed for kernel " + in.kernel_release.value_or("?") + "; after an upgrade to a "
                             + data::KernelCutoffs::text(ctx.inventory.kernel_cutoffs.vfio_virqfd_in_vfio)
                             + "+ kernel, plan again: passthru then removes it");
    }
}

} // namespace passthru::plan::detail
