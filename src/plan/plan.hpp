// SPDX-License-Identifier: GPL-2.0-or-later
// The plan: every change passthru would make to one host, each with its
// reason. Built by make_plan() from an inventory and a request; rendered by
// cli/, saved with --out, executed by apply/.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scan/inventory.hpp"
#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::plan {

enum class AcsOverride
{
    no,
    yes,
};

// --no-fabric: on an NVSwitch system, pass a selection that is not a supported
// full-passthrough shape without the NVSwitches, giving up NVLink in the guest.
enum class NoFabric
{
    no,
    yes,
};

enum class Backend
{
    proxmox,
    libvirt,
};

struct Plan;
struct PlanContext;

// One VM backend: everything that differs between backends outside their own
// planners is a field here, so a new backend is one row of the table in
// plan/vm/backends.cpp (and its planner).
struct BackendRow
{
    Backend backend;
    std::string_view name; // the word of --backend, the plan JSON and the journal
    bool numeric_vmid;     // --vm is a VMID (Proxmox VE's 100-999999999); else a domain name
    bool cluster_mapping;  // --mapping and --node-scan apply (Proxmox VE's cluster mappings)
    bool connect_uri;      // --connect URI applies
    // The VM side of a plan with this backend, given --vm.
    void (*plan_vm)(const PlanContext& ctx, Plan& plan);
};

// Every backend, the default (Backend::proxmox) first.
std::span<const BackendRow> backend_rows();
const BackendRow& backend_row(Backend backend);
// "proxmox or libvirt": every backend's word, for messages.
std::string backend_names();

// "proxmox" or "libvirt": the word of --backend, the plan JSON and the journal.
std::string_view to_string(Backend backend);
// nullopt for any other word.
std::optional<Backend> backend_from(std::string_view word);

enum class ApplyNetwork
{
    staged, // write /etc/network/interfaces.new only (PVE's pending file)
    now,    // also run ifreload -a (with the lock-out guard)
};

// --bond/--bridge options.
struct NetworkRequest
{
    std::vector<std::string> bond_slaves;
    std::string bond_mode = "balance-rr";
    std::string bond_name = "bond0";
    std::string bridge = "vmbr0";
    std::optional<std::string> address; // CIDR
    std::optional<std::string> gateway;
    std::optional<std::string> xmit_hash_policy;
    bool vlan_aware = false;
    bool pin_nics = false; // --pin-nics: pin every unpinned NIC as Proxmox VE 9 does
    ApplyNetwork apply = ApplyNetwork::staged;
    std::optional<int> confirm_timeout_seconds;
};

// Proxmox VE's VMID range (pve-common's pve-vmid format).
inline constexpr std::uint64_t k_min_vmid = 100;
inline constexpr std::uint64_t k_max_vmid = 999'999'999;

// --node-scan NODE=FILE: another cluster node's 'passthru scan --json' document,
// read on this machine (not under --root) each time the plan is made.
struct NodeScan
{
    std::string node; // the node's Proxmox VE name
    std::string file;
};

// --ct N --gpus SPEC: cards a Proxmox VE container gets as device nodes
// (devN: lines), the cards staying on the host's nvidia driver.
struct ContainerRequest
{
    std::string ct;   // the container's VMID as given (checked as --vm's)
    std::string gpus; // the --gpus after it, same grammar as the VM's
};

// passthru kernel pin / unpin / trial (kernel/pin.hpp): a generation that changes which
// kernel the boot loader starts by default (pin, unpin), or boots one kernel once (trial,
// with Request::trial_minutes; its confirm pins it), and nothing else.
enum class KernelAction
{
    pin,
    unpin,
    trial,
};

std::string_view to_string(KernelAction action);

struct KernelRequest
{
    KernelAction action = KernelAction::pin;
    std::string release; // pin, trial: the kernel release; unpin: empty
};

// --romfile SLOT=FILE: a ROM image (a PCI option ROM) for the card SLOT names (as
// --gpus takes one), read on this machine (not under --root) each time the plan is
// made, checked (format/pci_rom), placed in /usr/share/kvm and named by romfile= on
// the card's hostpci line (docs/facts.md: rom-files).
struct RomFile
{
    std::string slot;
    std::string file;
};

// What the user asked for. Serialised into saved plans and journals.
struct Request
{
    std::string vm;                    // --vm as given: a VMID (Proxmox) or a domain name (libvirt)
    std::optional<std::uint64_t> vmid; // parsed VMID for the Proxmox backend
    std::string gpus;                  // "all", "0,1", "0000:01:00,0000:41:00" (as given)
    AcsOverride acs_override = AcsOverride::no;
    NoFabric no_fabric = NoFabric::no;
    Backend backend = Backend::proxmox;
    std::optional<std::string> mapping;     // --mapping NAME (PVE cluster mapping)
    std::vector<NodeScan> node_scans;       // --node-scan: a cluster mapping from these nodes' scans (no --vm)
    std::vector<RomFile> romfiles;          // --romfile, in the order given
    std::optional<std::string> connect_uri; // --connect URI (libvirt)
    std::optional<std::string> vm_profile;  // --profile NAME (VM profile)
    std::optional<NetworkRequest> network;
    // --ct N --gpus SPEC, each container once, in the order given (plan/container/).
    std::vector<ContainerRequest> containers;
    // apply --trial (plan/trial.hpp): the minutes the trial boot's watchdog
    // waits for 'passthru confirm'; nullopt for a normal apply.
    std::optional<int> trial_minutes;
    // passthru kernel pin/unpin/trial: set only for those generations (no VM).
    std::optional<KernelRequest> kernel;
    // The SSH session the command runs in (SSH_CONNECTION: "client cport server
    // sport"), read from the environment once by the CLI and only on the host
    // itself; nullopt under --root. Not part of a saved plan: each command
    // fills in its own.
    std::optional<std::string> ssh_connection;
};

// What happens to one host file. The same words everywhere: the plan JSON,
// the human plan, the journal, history and rollback ("create", "modify",
// "delete").
enum class FileAction
{
    create,
    modify,
    remove, // spelled "delete" (a C++ keyword cannot name it)
};

std::string_view to_string(FileAction action);
// nullopt for any other word.
std::optional<FileAction> file_action_from(std::string_view word);

struct FileChange
{
    std::string path; // host path, e.g. "/etc/modprobe.d/passthru-vfio.conf"
    FileAction action = FileAction::create;
    std::optional<std::string> before; // current content; nullopt when absent
    std::optional<std::string> after;  // planned content; nullopt when removed
    std::optional<std::string> before_sha256;
    mode_t mode = 0644;               // for created files; existing files keep theirs
    std::vector<std::string> reasons; // one line each, shown with the diff
    // Bytes rather than text (a ROM image): base64 in the plan JSON ("encoding"),
    // no diff in the human plan.
    bool binary = false;
};

// An external command run after the files are in place (update-initramfs,
// update-grub, proxmox-boot-tool refresh, qm create, ifreload -a).
struct PlannedCommand
{
    std::vector<std::string> argv;
    std::string reason;
};

struct KernelArgs
{
    std::vector<std::string> add;
    std::vector<std::string> remove;
};

struct SelectedGpu
{
    std::string slot;
    std::string name; // profile or pci.ids name
    std::vector<std::string> functions;
    std::vector<std::string> ids; // vendor:device of every function
    std::vector<int> iommu_groups;
    bool boot_vga = false;
};

struct Refusal
{
    std::string message;
    std::vector<std::string> hints;
};

// A libvirt domain whose definition changes (libvirt backend).
struct DomainChange
{
    std::string uri;
    std::string name;
    std::optional<std::string> before_xml;
    std::string after_xml;
    std::vector<std::string> reasons;
};

struct Plan
{
    Request request;
    std::vector<FileChange> files;
    std::vector<PlannedCommand> commands;
    KernelArgs kernel_args;
    std::vector<std::string> vfio_ids;
    std::string binding; // "ids" or "address": how vfio-pci claims the cards
    std::vector<SelectedGpu> gpus;
    std::vector<SelectedGpu> nvswitches; // the NVSwitches passed with the GPUs (full passthrough), with their groups
    std::vector<DomainChange> domains;
    std::vector<std::string> warnings;
    std::vector<Refusal> refusals;
    std::vector<std::string> notes; // reboot needed, what verify checks
    // A trial (Request::trial_minutes): the binding arguments the rooms put on
    // the trial entry's command line instead of into files every boot reads
    // ("vfio_pci.ids=...", "modprobe.blacklist=..."); plan/trial.cpp adds them.
    std::vector<std::string> trial_args;

    bool refused() const { return !refusals.empty(); }
    // Nothing to write and nothing to run: applying it is a no-op.
    bool empty() const { return files.empty() && commands.empty() && domains.empty(); }
};

} // namespace passthru::plan
