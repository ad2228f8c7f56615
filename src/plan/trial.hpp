// SPDX-License-Identifier: GPL-2.0-or-later
// The trial boot ('passthru apply --trial', docs/facts.md: trial-boot): the
// planned kernel command line and the vfio binding take effect for one boot
// only, and the boot loader's default entry stays exactly as it was.
//
// Plain GRUB and systemd-boot through proxmox-boot-tool (one row each in
// trial.cpp's loader table). The rooms plan as for a normal apply, except
// that what binds (vfio-pci ids, the host-driver blacklist) goes on the
// command line (Plan::trial_args) and the install hook of an address binding
// acts only with the marker on /proc/cmdline. plan_trial() then takes the
// command-line files out of the plan and adds instead:
//   the trial entry                the running kernel, the default entry's
//                                  arguments, the planned ones, the marker,
//                                  and systemd.wants= for the watchdog timer:
//     GRUB: /etc/grub.d/42_passthru_trial, a "passthru trial" menu entry
//           that update-grub adds, and grub-reboot selects once
//     systemd-boot: /etc/passthru/trial-loader-entry.conf, a Boot Loader
//           Specification entry that the helper trial-loader-entry copies to
//           every ESP as loader/entries/passthru-trial.conf and selects once
//           (LoaderEntryOneShot) after proxmox-boot-tool refresh
//   passthru-trial.{timer,service} the watchdog: reboots after N minutes
//                                  unless the trial entry is gone
//   passthru-trial-revert.service  the fallback: on a boot without the marker
//   + multi-user.target.d drop-in  (the default entry after the watchdog's
//                                  reboot or a reset) it runs 'passthru
//                                  rollback --trial-fallback', which undoes
//                                  the trial's generation (and removes these)
// Every file that is left affects every boot only harmlessly without the
// marker: vfio modules load but bind nothing, softdeps only order loads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plan/paths.hpp"
#include "plan/planner.hpp"
#include "scan/boot_loader.hpp"

namespace passthru::plan {

inline constexpr std::string_view k_trial_entry_id = "passthru-trial";
// The trial's files are in plan/paths.hpp (k_trial_*). systemd-boot: the id
// the staged entry has on every ESP, and the helper (installed with passthru)
// that puts it there and selects it once.
inline constexpr std::string_view k_trial_loader_entry_id = "passthru-trial.conf";
inline constexpr std::string_view k_trial_loader_helper_name = "trial-loader-entry";
inline constexpr std::string_view k_trial_revert_unit = "passthru-trial-revert.service";
inline constexpr int k_trial_default_minutes = 10;

// The files a trial adds on any boot loader (confirm takes them out again).
std::vector<std::string_view> trial_files();

// The installed path of the systemd-boot helper (<prefix>/lib/passthru/trial-loader-entry).
std::string trial_loader_helper();

// What the reboot into the trial a plan makes does (apply's next steps), and
// the command that selects the trial entry once more on this boot loader
// (confirm's hint); empty where there is no trial.
std::string trial_reboot_step(const Plan& plan);
std::string trial_boot_again(scan::Bootloader loader);

// Turns the plan the rooms made for a trial request into the trial; refuses
// (Plan::refusals) what a trial cannot keep to one boot.
void plan_trial(const PlanContext& ctx, Plan& plan);

// What confirm adds to `plan` when a trial is over: the trial's files removed (which also
// disarms the watchdog), the boot loader's refresh unless the plan runs it already, and the
// loader's own cleanup of the one-time selection. False when no trial file is there.
bool end_trial(const PlanContext& ctx, Plan& plan);

// 'passthru confirm' after a good trial boot: the normal plan for the
// trial's request (the binding in files every boot reads, the arguments on
// the default entry), and the trial's files removed, which also disarms the
// watchdog (its service needs the trial entry's script).
Result<Plan> make_confirm_plan(const scan::Inventory& inventory, const util::HostFs& fs, const data::DataDir& data, Request request);

} // namespace passthru::plan
