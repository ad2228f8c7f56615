// SPDX-License-Identifier: GPL-2.0-or-later
// `passthru kernel pin KVER` / `unpin`: which installed kernel the boot loader starts by
// default, set through the files the host's own boot-loader tool reads (docs/facts.md:
// kernel-pin) and its refresh, as a plan: the CLI shows it (--dry-run), applies it as one
// journaled generation, and rollback restores the files byte for byte and re-runs the
// refresh. How each boot loader pins is its column scan::BootLoaderSpec::pin; pin.cpp has
// one row per kind.
#pragma once

#include <optional>
#include <string>

#include "apply/journal.hpp"
#include "data/data_dir.hpp"
#include "plan/plan.hpp"
#include "scan/inventory.hpp"
#include "util/host_fs.hpp"

namespace passthru::kernel {

// Errc::usage when `release` is not a kernel release word or not installed (no
// /lib/modules/RELEASE or no /boot/vmlinuz-RELEASE, which proxmox-boot-tool and GRUB's
// 10_linux need), Errc::precondition when this boot loader cannot pin (KernelPin::none) or
// GRUB has no menu entry for it (/boot/grub/grub.cfg not regenerated since it was installed).
// An empty plan: the kernel is pinned already.
Result<plan::Plan> plan_pin(const util::HostFs& fs, const scan::Inventory& inventory, const data::DataDir& data,
                            const std::string& release);

// Removes every pin file of this boot loader that exists; an empty plan when none does.
Result<plan::Plan> plan_unpin(const util::HostFs& fs, const scan::Inventory& inventory, const data::DataDir& data);

// `passthru kernel trial KVER`: the trial machinery of 'apply --trial' (plan/trial.hpp) with
// the trial entry starting KVER instead of the running kernel, with the default entry's
// command line as it is (nothing else changes). `configuring` is the generation whose cards
// and arguments verify checks on the trial boot (apply::newest_configuring); nullopt when
// passthru configured nothing. Errc::usage as plan_pin for KVER, and for the running kernel;
// Errc::precondition with the trial's refusal (a boot loader without a trial, ...).
Result<plan::Plan> plan_kernel_trial(const util::HostFs& fs, const scan::Inventory& inventory, const data::DataDir& data,
                                     const std::string& release, int minutes, const std::optional<apply::Manifest>& configuring);

// 'passthru confirm' on the trial boot of a kernel trial: KVER pinned (plan_pin) and the
// trial's files and one-time selection gone (plan::end_trial). Errc::precondition when the
// running kernel is not KVER.
Result<plan::Plan> plan_kernel_trial_confirm(const util::HostFs& fs, const scan::Inventory& inventory, const data::DataDir& data,
                                             const std::string& release);

// The kernel pinned now: the first line of proxmox-boot-tool's pin file, or the kernel of
// GRUB_DEFAULT in a pin drop-in; nullopt when none is pinned.
std::optional<std::string> pinned_kernel(const util::HostFs& fs);

} // namespace passthru::kernel
