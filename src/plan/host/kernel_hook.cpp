// SPDX-License-Identifier: GPL-2.0-or-later
// The kernel hook (docs/facts.md: kernel-hooks): /etc/kernel/postinst.d/passthru, which
// the kernel packages' postinst runs (run-parts, in name order: after initramfs-tools and
// dkms, before zz-proxmox-boot and zz-update-grub) with the new kernel's release. It runs
// passthru's helper kernel-postinst, which prints 'passthru kernel check --hook KVER' into
// apt's output and applies /etc/passthru/kernel.conf. The file is the same for every plan,
// so a second VM's plan leaves it alone; a file already there (the package's, or a link a
// user made as the README said) is not touched: one owner each.
#include <string>

#include "plan/host/host_detail.hpp"

namespace passthru::plan::detail {

void plan_kernel_hook(const PlanContext& ctx, Plan& plan)
{
    if (ctx.fs.stat(k_kernel_hook).type != util::FileType::missing) {
        return;
    }
    const std::string helper = std::string(PASSTHRU_INSTALLED_HELPER_DIR) + "/kernel-postinst";
    auto text = render_or_refuse(ctx, plan, "kernel-hook.mustache", {{"path", k_kernel_hook}, {"helper", helper}});
    if (!text) {
        return;
    }
    if (stage_file(ctx, plan, k_kernel_hook, *text,
                   {"runs passthru's kernel check on every kernel apt installs from now on and prints the verdict in apt's output, so "
                    "a kernel that would break passthrough is named before the reboot into it",
                    "never fails the kernel's installation; what it does on a broken kernel is /etc/passthru/kernel.conf's on-break "
                    "(warn, or pin the last good kernel)"})) {
        plan.files.back().mode = 0755; // run-parts runs only executable hooks
    }
}

} // namespace passthru::plan::detail
