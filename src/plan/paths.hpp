// SPDX-License-Identifier: GPL-2.0-or-later
// Every path passthru's planners write, in one table: the files they write by
// their full path, and the directories whose files they write, by the shape
// of the file name. The planners build their paths from the constants here;
// rollback and recovery act only on a journal whose paths the table holds
// (apply/manifest_check.hpp). A new planned path is added here, and only here.
// The rooms reach this header through plan/plan_detail.hpp.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace passthru::plan {

// A file name passthru writes: not hidden, and only [A-Za-z0-9._@+-].
constexpr bool is_plain_file_name(std::string_view name)
{
    return !name.empty() && name.front() != '.'
           && name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@+-") == std::string_view::npos;
}

// A directory whose files the planners write: the plain names PREFIX...SUFFIX,
// with at least one character between the two.
struct WrittenDir
{
    std::string_view dir; // absolute, no trailing slash
    std::string_view prefix;
    std::string_view suffix;

    // DIR/NAME.
    [[nodiscard]] std::string file(std::string_view name) const { return std::string(dir) + "/" + std::string(name); }

    // True when PATH lies below DIR, whatever its name.
    [[nodiscard]] constexpr bool contains(std::string_view path) const
    {
        return path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/';
    }

    // True when PATH (normalised) names a file of this shape directly in DIR.
    [[nodiscard]] constexpr bool holds(std::string_view path) const
    {
        const auto slash = path.rfind('/');
        if (slash == std::string_view::npos || path.substr(0, slash) != dir) {
            return false;
        }
        const std::string_view name = path.substr(slash + 1);
        return is_plain_file_name(name) && name.starts_with(prefix) && name.ends_with(suffix)
               && name.size() > prefix.size() + suffix.size();
    }
};

// --- files by their full path ---------------------------------------------------
// Besides these, the planners edit the command-line file of every boot loader
// (scan::BootLoaderSpec::cmdline_file: /etc/default/grub, /etc/kernel/cmdline).

// plan/host: the initramfs module list, and the old guides' vfio_virqfd line.
inline constexpr std::string_view k_initramfs_modules = "/etc/initramfs-tools/modules";
inline constexpr std::string_view k_modules = "/etc/modules";
// plan/network: the live file and PVE's pending one.
inline constexpr std::string_view k_interfaces = "/etc/network/interfaces";
inline constexpr std::string_view k_interfaces_new = "/etc/network/interfaces.new";
// plan/vm: the cluster's PCI mappings.
inline constexpr std::string_view k_pci_mapping_file = "/etc/pve/mapping/pci.cfg";
// GRUB's environment block, which the trial's grub-reboot and grub-editenv edit.
inline constexpr std::string_view k_grubenv = "/boot/grub/grubenv";
// plan/trial: the trial entry (GRUB: a /etc/grub.d script; systemd-boot: the staged entry).
inline constexpr std::string_view k_trial_grub_script = "/etc/grub.d/42_passthru_trial";
inline constexpr std::string_view k_trial_loader_entry = "/etc/passthru/trial-loader-entry.conf";

// kernel pin (kernel/pin.hpp): proxmox-boot-tool's pin files, which its refresh reads.
inline constexpr std::string_view k_kernel_pin_file = "/etc/kernel/proxmox-boot-pin";
inline constexpr std::string_view k_next_boot_pin_file = "/etc/kernel/next-boot-pin";
// plan/host: the kernel hook, which runs 'passthru kernel check --hook' when a kernel is installed.
inline constexpr std::string_view k_kernel_hook = "/etc/kernel/postinst.d/passthru";

inline constexpr std::array k_written_files{
    k_initramfs_modules,  k_modules,         k_interfaces,         k_interfaces_new, k_pci_mapping_file, k_grubenv, k_trial_grub_script,
    k_trial_loader_entry, k_kernel_pin_file, k_next_boot_pin_file, k_kernel_hook,
};

// --- directories, by the shape of the file name ---------------------------------
// Each with passthru's own files in it (checked against the rule when compiled).

// plan/host: GRUB_CMDLINE_LINUX_DEFAULT drop-ins.
inline constexpr WrittenDir k_default_grub_d{"/etc/default/grub.d", "", ".cfg"};
inline constexpr std::string_view k_grub_dropin = "/etc/default/grub.d/passthru.cfg";
static_assert(k_default_grub_d.holds(k_grub_dropin));
// kernel pin on plain GRUB: GRUB_DEFAULT, in proxmox-boot-tool's own drop-in where it is
// installed (its 'kernel unpin' removes it), in passthru's otherwise.
inline constexpr std::string_view k_grub_pin_dropin_pbt = "/etc/default/grub.d/proxmox-kernel-pin.cfg";
inline constexpr std::string_view k_grub_pin_dropin = "/etc/default/grub.d/passthru-kernel-pin.cfg";
static_assert(k_default_grub_d.holds(k_grub_pin_dropin_pbt) && k_default_grub_d.holds(k_grub_pin_dropin));

// plan/host: the vfio binding; other files' lines that would fight it.
inline constexpr WrittenDir k_modprobe_d{"/etc/modprobe.d", "", ".conf"};
inline constexpr std::string_view k_modprobe_conf = "/etc/modprobe.d/passthru-vfio.conf";
static_assert(k_modprobe_d.holds(k_modprobe_conf));

// plan/host: the vfio modules at boot; other files' vfio_virqfd lines.
inline constexpr WrittenDir k_modules_load_d{"/etc/modules-load.d", "", ".conf"};
inline constexpr std::string_view k_modules_load_conf = "/etc/modules-load.d/vfio.conf";
static_assert(k_modules_load_d.holds(k_modules_load_conf));

// plan/vm: the VM configs (and the one qm set --efidisk0 edits).
inline constexpr WrittenDir k_qemu_server_d{"/etc/pve/qemu-server", "", ".conf"};

// plan/network/pinning: PVE 9's NIC-name pinning (50-pmx-NAME.link).
inline constexpr WrittenDir k_systemd_network_d{"/usr/local/lib/systemd/network", "50-p", ".link"};

// plan/trial: the watchdog (timer and service) and the revert unit ...
inline constexpr WrittenDir k_systemd_system_d{"/etc/systemd/system", "passthru-", ""};
inline constexpr std::string_view k_trial_timer = "/etc/systemd/system/passthru-trial.timer";
inline constexpr std::string_view k_trial_service = "/etc/systemd/system/passthru-trial.service";
inline constexpr std::string_view k_trial_revert = "/etc/systemd/system/passthru-trial-revert.service";
static_assert(k_systemd_system_d.holds(k_trial_timer) && k_systemd_system_d.holds(k_trial_service)
              && k_systemd_system_d.holds(k_trial_revert));

// ... and the drop-in that makes every boot start the revert unit.
inline constexpr WrittenDir k_multi_user_target_d{"/etc/systemd/system/multi-user.target.d", "passthru-", ".conf"};
inline constexpr std::string_view k_trial_dropin = "/etc/systemd/system/multi-user.target.d/passthru-trial.conf";
static_assert(k_multi_user_target_d.holds(k_trial_dropin));

// plan/container: the container configs (devN: lines) ...
inline constexpr WrittenDir k_lxc_d{"/etc/pve/lxc", "", ".conf"};
// ... the unit that makes the nvidia device nodes at boot (in k_systemd_system_d) ...
inline constexpr std::string_view k_nvidia_nodes_service = "/etc/systemd/system/passthru-nvidia-nodes.service";
static_assert(k_systemd_system_d.holds(k_nvidia_nodes_service));
// ... and the drop-in that runs it before pve-guests.service starts the containers.
inline constexpr WrittenDir k_pve_guests_d{"/etc/systemd/system/pve-guests.service.d", "passthru-", ".conf"};
inline constexpr std::string_view k_nvidia_nodes_dropin = "/etc/systemd/system/pve-guests.service.d/passthru-nvidia-nodes.conf";
static_assert(k_pve_guests_d.holds(k_nvidia_nodes_dropin));

// plan/vm: ROM images (--romfile) where qemu-server looks for a hostpci romfile=
// (docs/facts.md: rom-files), "passthru-VVVV-DDDD-SHA.rom".
inline constexpr WrittenDir k_kvm_rom_d{"/usr/share/kvm", "passthru-", ".rom"};

inline constexpr std::array k_written_dirs{
    k_default_grub_d,   k_modprobe_d,          k_modules_load_d, k_qemu_server_d, k_systemd_network_d,
    k_systemd_system_d, k_multi_user_target_d, k_lxc_d,          k_pve_guests_d,  k_kvm_rom_d,
};

// The files the planners write by their full path: k_written_files and the
// command-line file of every boot loader.
const std::vector<std::string_view>& written_files();

// True when PATH (absolute and normalised: the caller checks that) is one
// the planners write: one of written_files(), or a file k_written_dirs holds.
bool is_written_path(std::string_view path);

} // namespace passthru::plan
