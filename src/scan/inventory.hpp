// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/gpu_profile.hpp"
#include "data/gpu_vendors.hpp"
#include "data/kernel_cutoffs.hpp"
#include "format/kernel_log.hpp"
#include "scan/boot_loader.hpp"
#include "scan/pci_address.hpp"
#include "scan/pci_resource.hpp"

namespace passthru::scan {

// PCI class codes compared as (sysfs class >> 8).
namespace pci_class {
inline constexpr std::uint16_t display_vga = 0x0300;
inline constexpr std::uint16_t display_xga = 0x0301;
inline constexpr std::uint16_t display_3d = 0x0302;
inline constexpr std::uint16_t display_other = 0x0380;
inline constexpr std::uint16_t bridge_pci = 0x0604;
inline constexpr std::uint16_t bridge_host = 0x0600;
inline constexpr std::uint8_t base_storage = 0x01;
inline constexpr std::uint8_t base_network = 0x02;
inline constexpr std::uint8_t base_display = 0x03;
inline constexpr std::uint8_t base_bridge = 0x06;
} // namespace pci_class

using data::GpuVendor;
using data::GpuVendors;

struct LinkInfo
{
    std::optional<std::string> speed;     // "8.0 GT/s PCIe"
    std::optional<std::string> max_speed; // "16.0 GT/s PCIe"
    std::optional<int> width;
    std::optional<int> max_width;
    // Numeric GT/s parsed from the strings, for comparisons.
    std::optional<double> speed_gts;
    std::optional<double> max_speed_gts;
};

// One PCI function as the kernel shows it in sysfs. Every field the kernel
// may lack (or a broken tree may garble) is optional.
// A network interface on a PCI function, with the MAC that NIC name pinning
// matches on (docs/facts.md: pve9).
struct NetLink
{
    std::string name;
    std::string mac;      // /sys/class/net/<name>/address, lower case
    std::string perm_mac; // permanent MAC: bonding_slave/perm_hwaddr for a bond member (its address is the bond's), else mac
    std::optional<int> ifindex;
};

struct PciDevice
{
    PciAddress address;
    std::string sysfs_path; // host path of the device directory (resolved)
    std::optional<std::uint16_t> vendor;
    std::optional<std::uint16_t> device;
    std::optional<std::uint32_t> class_code; // 24-bit, as in sysfs
    std::optional<std::uint16_t> subsystem_vendor;
    std::optional<std::uint16_t> subsystem_device;
    std::optional<std::uint8_t> revision;
    std::string vendor_name; // from pci.ids; empty when unknown
    std::string device_name;
    std::string class_name;
    std::optional<std::string> driver;
    std::optional<std::string> driver_override;
    std::optional<int> iommu_group;
    std::optional<int> numa_node;
    bool boot_vga = false;
    std::optional<LinkInfo> link;
    std::vector<std::string> reset_methods;
    std::optional<PciAddress> parent; // the bridge or port above it, if any
    bool is_bridge = false;           // header type 1 / class 0604
    bool has_acs = false;             // ACS extended capability present
    bool is_virtfn = false;           // an SR-IOV virtual function
    std::optional<PciAddress> physfn; // its physical function
    std::optional<int> sriov_totalvfs;
    std::optional<int> sriov_numvfs;
    std::vector<std::string> net_interfaces; // /sys/class/net names on this function
    std::vector<NetLink> net_links;          // the same interfaces with their MACs
    // Assigned memory BARs (sysfs `resource`); read for display functions and the
    // functions of a GPU vendor (profiles/host/vendors.json) only, whose 64-bit BARs
    // the guest must place (docs/facts.md: address-space).
    std::vector<MemBar> mem_bars;
    // Whether BAR0-BAR5 hold any memory or I/O resource; read for the non-bridge functions
    // of base class 06 only (nullopt elsewhere, or when `resource` is unreadable), which may
    // go along with a card in its IOMMU group (scan/group_rule.hpp).
    std::optional<bool> has_bars;
    // The state a card may be left in after a VM (scan/card_state.hpp); read for display
    // functions and the functions of a GPU vendor only. power_state: sysfs `power_state`
    // ("D0" ... "D3cold"); config_all_ones: the config space reads back as all ones (the
    // function does not answer).
    std::optional<std::string> power_state;
    bool config_all_ones = false;

    std::optional<std::uint16_t> class16() const
    {
        if (!class_code) {
            return std::nullopt;
        }
        return static_cast<std::uint16_t>(*class_code >> 8);
    }
    std::optional<std::uint8_t> base_class() const
    {
        if (!class_code) {
            return std::nullopt;
        }
        return static_cast<std::uint8_t>(*class_code >> 16);
    }
    bool is_display() const { return base_class() == pci_class::base_display; }
    bool is_storage() const { return base_class() == pci_class::base_storage; }
    bool is_network() const { return base_class() == pci_class::base_network; }
    // A function of a GPU vendor's switch class (vendors.json's switch_class): for NVIDIA
    // the PCIe endpoint of class 0680 through which the driver and Fabric Manager
    // manage an NVSwitch (docs/facts.md: nvswitch).
    bool is_gpu_switch(const GpuVendors& vendors) const { return vendors.is_switch(vendor, class16()); }
    // PCIe ports and PCI bridges may share a group with a passed device;
    // host and ISA/LPC bridges are endpoints like any other.
    bool is_bridge_like() const { return is_bridge; }
    // "10de:1e07" (lower-case); empty when an id is unknown.
    std::string vendor_device() const;
};

struct IommuGroup
{
    int number = 0;
    std::vector<PciAddress> devices;
    std::optional<std::string> type; // "DMA", "identity", ...
};

enum class Isolation
{
    clean,           // only the card's functions plus ports/bridges and functions that go along
    shared_with_gpu, // another GPU card is in the group: they move together
    shared,          // other endpoints share the group
    unknown,         // no IOMMU groups at all
};

// Which kind of guest a config line belongs to.
enum class GuestKind
{
    vm,        // /etc/pve/qemu-server/<vmid>.conf
    container, // /etc/pve/lxc/<vmid>.conf
};

// One line of a guest's config that reaches a GPU card (scan/card_users.hpp):
// a VM's hostpciN (by address or mapping=), a container's devN:, lxc.mount.entry
// or lxc.cgroup2.devices.allow line.
struct CardUser
{
    GuestKind kind = GuestKind::vm;
    std::string vmid;
    std::string config;    // the file: "/etc/pve/lxc/105.conf"
    std::size_t line = 0;  // 1-based line number in it
    std::string key;       // "hostpci0", "dev0", "lxc.mount.entry"
    std::string value;     // as written
    bool pending = false;  // in the pending section ([PENDING], [pve:pending])
    bool wildcard = false; // the line allows every card of a kind ("c 195:* rwm"), naming none
    std::string via;       // how it reaches the card: "/dev/nvidia0 = c 195:0", "mapping gpu0"
    bool running = false;  // the guest runs now (qemu-server's pid file, lxc's command socket)
};

// All functions in the slot of a display-class function.
struct GpuCard
{
    std::string slot; // "0000:01:00"
    std::uint16_t vendor = 0;
    std::vector<PciAddress> functions;
    std::vector<int> iommu_groups;
    Isolation isolation = Isolation::unknown;
    std::vector<PciAddress> shares_with;     // functions of other GPU cards in the groups
    std::vector<PciAddress> other_endpoints; // every other non-bridge device in the groups
    std::vector<PciAddress> host_critical;   // storage and network among other_endpoints
    std::vector<PciAddress> goes_along;      // driverless, BAR-less 06xx functions in the groups (scan/group_rule.hpp)
    bool boot_vga = false;
    std::optional<int> numa_node;
    // The row of the card's vendor in profiles/host/vendors.json (nullptr: a vendor
    // passthru does not handle): what plan decides from, never the raw id.
    std::shared_ptr<const GpuVendor> vendor_row;
    // The row of the card's model in profiles/gpus/ (the profile that lists the id of
    // its first function; nullptr: none does): what plan reads the model from.
    std::shared_ptr<const data::GpuProfile> profile_row;
    // The driver of its display function now ("vfio-pci", "nvidia", "nouveau"); nullopt: none.
    std::optional<std::string> driver;
    // With the nvidia driver on it: its device minor (/dev/nvidiaM), from
    // /proc/driver/nvidia/gpus/<BDF>/information (docs/facts.md: nvidia-nodes).
    std::optional<std::uint32_t> nvidia_minor;
    // The guest config lines that reach it, by config file and line.
    std::vector<CardUser> users;
};

struct IommuState
{
    bool enabled = false; // groups exist
    int groups = 0;
    std::optional<bool> interrupt_remapping;
    std::string interrupt_remapping_evidence;
    std::vector<std::string> units; // sys/class/iommu entries (dmar0, ivhd0)
};

struct HostInfo
{
    std::string cpu_vendor; // "AMD", "Intel", or the raw vendor_id
    std::string cpu_model;
    std::optional<bool> virtualization;   // vmx/svm flag present
    std::optional<int> phys_address_bits; // "address sizes: N bits physical" (what QEMU's host-phys-bits passes on)
    std::optional<bool> pdpe1gb;          // 1 GiB pages (the pdpe1gb flag), which OVMF needs above 40 address bits
    std::optional<std::string> kernel;    // /proc/sys/kernel/osrelease
    // The kernels a boot entry can start (scan::bootable_kernels), newest first.
    std::vector<std::string> bootable_kernels;
    // CONFIG_INTEL_IOMMU_DEFAULT_ON as the running kernel's own config says it
    // (/boot/config-<kernel>, which Debian's and Proxmox's kernel packages ship); nullopt
    // when that file or its line is missing. docs/facts.md: iommu.
    std::optional<bool> intel_iommu_default_on_config;
    std::optional<std::string> cmdline;          // /proc/cmdline
    Bootloader bootloader = Bootloader::unknown; // its description: boot_loader(bootloader)
    std::string bootloader_evidence;
    bool uefi = false;
    bool proxmox_boot_tool = false;                 // ESPs listed in /etc/kernel/proxmox-boot-uuids
    std::optional<std::string> pve_version;         // pve-manager in the root's dpkg status
    std::optional<std::string> qemu_server_version; // qemu-server there: which VM config keys exist
    std::vector<std::string> loaded_modules;
    // Why this is an NVIDIA vGPU host, one line per piece of evidence (scan/vgpu.hpp);
    // empty: it is not one.
    std::vector<std::string> vgpu_evidence;
    std::optional<std::uint64_t> mem_total_kib;
    // The character-device majors of /proc/devices by driver name ("nvidia" 195,
    // "nvidia-uvm" its own); empty when unreadable.
    std::map<std::string, std::uint32_t> char_majors;
    // /proc/driver/nvidia/version: whether the nvidia module is loaded, and the version of
    // its "Kernel Module" line (nullopt: none readable).
    bool nvidia_loaded = false;
    std::optional<std::string> nvidia_version;
    // The "processor" entries of /proc/cpuinfo: Proxmox VE's limit on a VM's
    // sockets x cores (docs/facts.md: qm-start).
    int cpu_count = 0;
    // The huge page sizes the kernel offers (/sys/kernel/mm/hugepages/hugepages-<N>kB),
    // in KiB, ascending; nullopt when that directory is missing (no hugetlbfs).
    std::optional<std::vector<std::uint64_t>> hugepage_sizes_kib;
    IommuState iommu;

    bool is_amd() const { return cpu_vendor == "AMD"; }
    bool is_intel() const { return cpu_vendor == "Intel"; }
    bool module_loaded(std::string_view name) const;
    bool vgpu_host() const { return !vgpu_evidence.empty(); }
};

enum class Severity
{
    error,
    warning,
    info,
};

struct Problem
{
    Severity severity = Severity::info;
    std::string message;
    std::string fix;
};

// A pid file of qemu-server (/run/qemu-server/<VMID>.pid) and the process it names.
struct QemuPidFile
{
    std::optional<long long> pid; // nullopt: the file holds no pid above 0
    // /proc/<pid>/cmdline split at its NULs; nullopt: the root does not show that process
    std::optional<std::vector<std::string>> cmdline;
};

// What the running host shows beside its hardware that plan decides from, read
// here so that plan reads nothing live: through HostFs, so under --root these
// are the root's copies. Not part of scan --json (another node's scan carries
// its hardware, not this session's state).
struct RuntimeState
{
    // True when the root is this machine's own / (HostFs::is_live()): the one
    // answer plan asks whether it plans for this machine or for a copy of one.
    bool live = false;
    std::optional<std::string> route_v4;               // /proc/net/route as read; nullopt: unreadable
    std::optional<std::string> route_v6;               // /proc/net/ipv6_route
    std::optional<std::string> inet6_addresses;        // /proc/net/if_inet6
    std::map<std::string, QemuPidFile> qemu_pid_files; // by the VMID that names the file
    std::optional<std::string> node_name;              // this node's name (/etc/hostname, as PVE names nodes)
    std::optional<std::string> storage_cfg;            // /etc/pve/storage.cfg
    std::optional<std::string> vmlist;                 // /etc/pve/.vmlist (the cluster's VMIDs, JSON)
    // The containers whose LXC command socket (@/var/lib/lxc/<vmid>/command) /proc/net/unix
    // lists: those pve-container counts as running (docs/facts.md: lxc-config).
    std::vector<std::string> running_containers;
};

struct Inventory
{
    HostInfo host;
    std::vector<PciDevice> devices; // sorted by address
    std::map<int, IommuGroup> groups;
    std::vector<GpuCard> gpus; // sorted by slot
    // The NVSwitches of an NVSwitch system (HGX/DGX baseboard), one entry per slot, with the
    // same group verdict as a card (other switches and GPU cards count as shares_with);
    // empty on any other host. docs/facts.md: nvswitch.
    std::vector<GpuCard> nvswitches;
    std::vector<Problem> problems;
    data::KernelCutoffs kernel_cutoffs; // the kernel facts scan judged with (profiles/host/kernel.json); plan uses the same
    GpuVendors vendors;                 // the GPU vendors scan gave the cards their rows from (profiles/host/vendors.json)
    RuntimeState runtime;               // the running host's state that plan decides from (not in scan --json)
    // The kernel log's give-ups since boot ("not ready 65535ms after FLR; giving up") for
    // the functions of the cards (scan/card_state.hpp); the log's source, or why there is none.
    std::vector<format::kernel_log::ReadyTimeout> ready_timeouts;
    std::string kernel_log_source;

    const PciDevice* find(const PciAddress& addr) const;
    // The first function of a card (nullptr: it has none, or none scanned).
    const PciDevice* first_function(const GpuCard& card) const;
    const GpuCard* find_gpu(std::string_view slot) const;
    // The card a function belongs to, if any.
    const GpuCard* gpu_of(const PciAddress& addr) const;
    // The NVSwitch a function belongs to, if any.
    const GpuCard* nvswitch_of(const PciAddress& addr) const;
    bool nvswitch_system() const { return !nvswitches.empty(); }
    // Names of network interfaces on the host with the PCI function they sit on.
    std::map<std::string, PciAddress> net_interfaces() const;
};

std::string_view to_string(Isolation isolation);
std::string_view to_string(Bootloader bootloader);
std::string_view to_string(Severity severity);
std::string_view to_string(GuestKind kind); // "VM", "container"

// Kernel release "6.8.12-4-pve" -> {6, 8}; nullopt when unparsable.

} // namespace passthru::scan
