// SPDX-License-Identifier: GPL-2.0-or-later
// plan_containers: cards for Proxmox VE containers (--ct N --gpus SPEC). Each
// card stays on the host's nvidia driver; the container gets its device nodes
// as devN: lines in /etc/pve/lxc/N.conf, which pve-container turns into a node
// inside the container and a cgroup rule for its major:minor when the container
// starts. The host side is the nvidia module in the target kernel and the nodes
// made at boot before pve-guests.service starts the containers.
// docs/facts.md: lxc-devices, nvidia-nodes.
#include <algorithm>
#include <map>
#include <set>

#include "format/lxc_config.hpp"
#include "plan/plan_detail.hpp"

namespace passthru::plan {

namespace {

namespace lxc = format::lxc;

// The group a container's own nodes get when its /etc/group cannot be read:
// Debian's static "video" group (base-passwd), which Ubuntu shares.
constexpr std::uint32_t k_default_video_gid = 44;
constexpr std::string_view k_nvidia_modprobe = "/usr/bin/nvidia-modprobe";
constexpr std::string_view k_nvidia_caps_dir = "/dev/nvidia-caps";

bool is_char_device(const util::HostFs& fs, const std::string& path)
{
    const auto info = fs.stat(path);
    return info.type == util::FileType::other && info.char_device;
}

// The gid of group NAME in an /etc/group text; nullopt when it has none.
std::optional<std::uint32_t> group_gid(std::string_view text, std::string_view name)
{
    for (const auto& line : util::split_lines(text)) {
        const auto fields = util::split(line, ":");
        if (fields.size() >= 3 && fields[0] == name) {
            const auto gid = util::parse_int(fields[2]);
            if (gid && *gid >= 0 && *gid <= 0xffffffffLL && fields[2].find_first_not_of("0123456789") == std::string::npos) {
                return static_cast<std::uint32_t>(*gid);
            }
        }
    }
    return std::nullopt;
}

// The container's own video (else render) group, from its root file system
// where pve-container mounts it (/var/lib/lxc/N/rootfs: while it runs, or after
// 'pct mount N'); else Debian's video gid, said in a note.
std::uint32_t container_gid(const PlanContext& ctx, const std::string& ct, Plan& plan)
{
    const std::string group_file = "/var/lib/lxc/" + ct + "/rootfs/etc/group";
    if (ctx.fs.stat(group_file).type == util::FileType::regular) {
        if (auto text = ctx.fs.read_file(group_file)) {
            for (const char* name : {"video", "render"}) {
                if (const auto gid = group_gid(*text, name)) {
                    plan.notes.push_back("container " + ct + ": its nodes get gid=" + std::to_string(*gid) + ", its own '" + name
                                         + "' group (" + group_file + ")");
                    return *gid;
                }
            }
        }
    }
    plan.notes.push_back("container " + ct + ": its own /etc/group is not reachable (" + group_file
                         + "), so its nodes get gid=" + std::to_string(k_default_video_gid)
                         + ", the 'video' group of Debian and Ubuntu; for a container whose video group has another id, run 'pct mount "
                         + ct + "' and plan again (docs/facts.md: lxc-devices)");
    return k_default_video_gid;
}

// The host nodes a container with these cards needs, in the order the devN:
// lines get them: each card's /dev/nvidiaM (its minor after this plan), the
// control and unified-memory nodes, and nvidia-modeset and nvidia-caps where
// the host has them.
std::vector<std::string> wanted_nodes(const PlanContext& ctx, const std::vector<std::uint32_t>& minors)
{
    std::vector<std::string> out;
    out.reserve(minors.size() + 5);
    for (const auto m : minors) {
        out.push_back("/dev/nvidia" + std::to_string(m));
    }
    for (const char* node : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}) {
        out.emplace_back(node);
    }
    if (is_char_device(ctx.fs, "/dev/nvidia-modeset")) {
        out.emplace_back("/dev/nvidia-modeset");
    }
    if (auto caps = ctx.fs.list_dir(k_nvidia_caps_dir)) {
        std::sort(caps->begin(), caps->end());
        for (const auto& name : *caps) {
            const std::string path = std::string(k_nvidia_caps_dir) + "/" + name;
            if (is_char_device(ctx.fs, path)) {
                out.push_back(path);
            }
        }
    }
    return out;
}

// The minor each card keeps on nvidia after this plan (the VM's cards leave it).
std::map<const scan::GpuCard*, std::uint32_t> minors_by_card(const std::vector<std::pair<const scan::GpuCard*, std::uint32_t>>& after)
{
    std::map<const scan::GpuCard*, std::uint32_t> out;
    for (const auto& [card, minor] : after) {
        out.emplace(card, minor);
    }
    return out;
}

std::string ct_card_label(const scan::Inventory& inv, const scan::GpuCard& card)
{
    return detail::card_label(inv, card);
}

// A card a container can get: on nvidia now (its minor known), not one of the
// VM's cards, not named by another VM's config.
bool check_card(const PlanContext& ctx, const ContainerRequest& req, const scan::GpuCard& card, Plan& plan)
{
    const std::string label = ct_card_label(ctx.inventory, card);
    if (std::find(ctx.selected.begin(), ctx.selected.end(), &card) != ctx.selected.end()) {
        plan.refusals.push_back({label + " is selected for VM " + ctx.request.vm + " and for container " + req.ct
                                     + ": a card on vfio-pci for a VM cannot also serve a container",
                                 {"give each guest its own cards (--vm ... --gpus A --ct " + req.ct + " --gpus B)"}});
        return false;
    }
    if (!card.nvidia_minor) {
        plan.refusals.push_back(
            {label + " is not driven by the host's nvidia driver now (driver " + card.driver.value_or("none")
                 + "): a container reaches a card through the nvidia driver's /dev/nvidiaM, and passthru names that node by the minor "
                   "the driver gave the card (/proc/driver/nvidia/gpus/<BDF>/information)",
             {"if the card is on vfio-pci for a VM, take it from the VM first (passthru rollback, or plan the VM without it) and reboot",
              "install the NVIDIA driver on the host (Debian's nvidia-driver from non-free, or NVIDIA's installer), reboot, and plan "
              "again"}});
        return false;
    }
    for (const auto& u : card.users) {
        if (u.kind == scan::GuestKind::vm && u.vmid != ctx.request.vm) {
            plan.refusals.push_back({label + " is named by VM " + u.vmid + " (" + u.config + ":" + std::to_string(u.line) + ": " + u.key
                                         + "): when that VM starts it takes the card from nvidia and container " + req.ct + " loses it",
                                     {"pick another card with --gpus", "remove the line first: qm set " + u.vmid + " --delete " + u.key}});
            return false;
        }
    }
    return true;
}

struct CtEdit
{
    std::vector<std::string> lines;   // the new devN: lines
    std::vector<std::string> reasons; // one for each
};

// A raw lxc.mount.entry of the current config that binds one of NODES: the
// devN: line does the same, so the raw line is one to take out by hand.
void warn_raw_lines(const lxc::CtConfig& config, const std::string& ct, const std::vector<std::string>& nodes, Plan& plan)
{
    for (const auto& line : config.lines()) {
        if (line.kind != lxc::LineKind::raw_lxc || !line.section.empty() || line.key != "lxc.mount.entry") {
            continue;
        }
        const auto source = lxc::mount_entry_source(line.value);
        if (source && std::find(nodes.begin(), nodes.end(), *source) != nodes.end()) {
            plan.warnings.push_back("container " + ct + " binds " + *source + " by hand (line " + std::to_string(line.number) + ": "
                                    + line.text + "), and its devN: line now passes the same node: remove the raw line from "
                                    + k_lxc_d.file(ct + ".conf") + " (passthru keeps every line it did not write)");
        }
    }
}

// The devN: lines for NODES that the config's current section lacks, at the
// lowest free indexes (those of the pending section count as taken).
std::optional<CtEdit> dev_lines(const lxc::CtConfig& config, const std::string& ct, const std::vector<std::string>& nodes,
                                std::optional<std::uint32_t> gid, const std::map<std::string, std::string>& why, Plan& plan)
{
    std::set<int> used;
    std::set<std::string> present;
    for (const auto& line : config.lines()) {
        if (line.kind != lxc::LineKind::key_value) {
            continue;
        }
        const auto index = lxc::dev_index(line.key);
        if (!index || (!line.section.empty() && line.section != lxc::k_pending_section)) {
            continue;
        }
        used.insert(*index);
        if (line.section.empty()) {
            if (const auto entry = lxc::DevEntry::parse(line.value)) {
                present.insert(entry->path);
            }
        }
    }
    warn_raw_lines(config, ct, nodes, plan);
    CtEdit edit;
    int next = 0;
    for (const auto& node : nodes) {
        if (present.contains(node)) {
            continue;
        }
        while (used.contains(next)) {
            ++next;
        }
        if (next > 255) {
            plan.refusals.push_back({"container " + ct + " has no free devN: key (dev0 to dev255 are taken)",
                                     {"remove devN: lines it no longer needs (pct set " + ct + " --delete devN)"}});
            return std::nullopt;
        }
        used.insert(next);
        const std::string key = "dev" + std::to_string(next);
        std::string value = node + (gid ? ",gid=" + std::to_string(*gid) : std::string());
        edit.lines.push_back(key + ": " + value);
        edit.reasons.push_back(key + ": " + value + ": " + why.at(node));
    }
    return edit;
}

// What each node is, for the reasons.
std::map<std::string, std::string> node_reasons(const PlanContext& ctx,
                                                const std::vector<std::pair<const scan::GpuCard*, std::uint32_t>>& cards,
                                                const std::vector<std::string>& nodes)
{
    std::map<std::string, std::string> why;
    const auto& majors = ctx.inventory.host.char_majors;
    const auto major_of = [&](const char* name) {
        const auto it = majors.find(name);
        return it == majors.end() ? std::string("its major") : std::to_string(it->second);
    };
    for (const auto& [card, minor] : cards) {
        why["/dev/nvidia" + std::to_string(minor)] = ct_card_label(ctx.inventory, *card) + ", c " + major_of("nvidia") + ":"
                                                     + std::to_string(minor)
                                                     + " (pve-container makes the node in the container and "
                                                       "allows that major:minor in its cgroup; docs/facts.md: lxc-devices)";
    }
    why["/dev/nvidiactl"] = "the nvidia driver's control node, c " + major_of("nvidia") + ":255, which every CUDA and NVML program opens";
    why["/dev/nvidia-uvm"] = "unified memory (nvidia-uvm, c " + major_of("nvidia-uvm") + ":0), which CUDA needs";
    why["/dev/nvidia-uvm-tools"] = "unified memory's tools node (c " + major_of("nvidia-uvm") + ":1), which CUDA's profilers open";
    for (const auto& node : nodes) {
        if (!why.contains(node)) {
            why[node] = "present on the host (" + node + "), so the container's driver libraries find it too";
        }
    }
    return why;
}

// One container: checks, then its config's new devN: lines.
void plan_container(const PlanContext& ctx, const ContainerCards& cc, const std::map<const scan::GpuCard*, std::uint32_t>& minors,
                    Plan& plan)
{
    const ContainerRequest& req = *cc.request;
    const std::string path = k_lxc_d.file(req.ct + ".conf");
    if (ctx.fs.exists(k_qemu_server_d.file(req.ct + ".conf"))) {
        plan.refusals.push_back({req.ct + " is a VM (" + k_qemu_server_d.file(req.ct + ".conf") + "), not a container",
                                 {"give a VM its cards with --vm " + req.ct}});
        return;
    }
    const std::size_t refusals = plan.refusals.size();
    const auto current = detail::read_current(ctx, plan, path);
    if (!current) {
        if (plan.refusals.size() == refusals) {
            plan.refusals.push_back({"container " + req.ct + " has no config (" + path + ")",
                                     {"create the container first (pct create), or check the VMID with pct list"}});
        }
        return;
    }
    const auto& running = ctx.inventory.runtime.running_containers;
    if (std::find(running.begin(), running.end(), req.ct) != running.end()) {
        plan.refusals.push_back(
            {"container " + req.ct + " is running (its LXC command socket @/var/lib/lxc/" + req.ct + "/command is open)",
             {"shut it down first: pct shutdown " + req.ct}});
        return;
    }
    std::vector<std::pair<const scan::GpuCard*, std::uint32_t>> cards;
    std::vector<std::uint32_t> card_minors;
    for (const auto* card : cc.cards) {
        if (!check_card(ctx, req, *card, plan)) {
            return;
        }
        const auto it = minors.find(card);
        const std::uint32_t minor = it == minors.end() ? *card->nvidia_minor : it->second;
        if (minor != *card->nvidia_minor) {
            plan.notes.push_back("container " + req.ct + ": " + ct_card_label(ctx.inventory, *card) + " is /dev/nvidia"
                                 + std::to_string(*card->nvidia_minor) + " now and /dev/nvidia" + std::to_string(minor)
                                 + " after the reboot (the VM's cards leave nvidia; docs/facts.md: nvidia-nodes): its line names the "
                                   "node it will have");
        }
        cards.emplace_back(card, minor);
        card_minors.push_back(minor);
    }
    std::sort(card_minors.begin(), card_minors.end());
    const auto config = lxc::CtConfig::parse(*current);
    std::optional<std::uint32_t> gid;
    if (config.unprivileged()) {
        gid = container_gid(ctx, req.ct, plan);
    } else {
        plan.notes.push_back("container " + req.ct
                             + " is privileged: its nodes get no gid= (pve-container's default owner 0:0, mode "
                               "0660), so only its root opens them");
    }
    const auto nodes = wanted_nodes(ctx, card_minors);
    const auto edit = dev_lines(config, req.ct, nodes, gid, node_reasons(ctx, cards, nodes), plan);
    if (!edit || edit->lines.empty()) {
        return;
    }
    detail::stage_file(ctx, plan, path, config.with_inserted(config.dev_insert_point(), edit->lines), edit->reasons);
    plan.notes.push_back("after the reboot, start the container (pct start " + req.ct
                         + "); nvidia-smi inside it needs the NVIDIA "
                           "userspace of the host module's version, without its kernel module (docs/facts.md: lxc-devices)");
}

// The nvidia module in the target kernel's module tree: passthru installs no driver.
void check_nvidia_module(const PlanContext& ctx, Plan& plan)
{
    const std::string kver = ctx.inventory.host.kernel.value_or("");
    const std::string get = "install one: Debian's nvidia-driver (non-free, with nvidia-kernel-dkms and proxmox-default-headers for "
                            "the Proxmox kernel) or NVIDIA's .run installer; passthru installs no driver";
    const auto has = detail::target_has_module(ctx.fs, kver, "nvidia");
    if (!has) {
        plan.notes.push_back("cannot tell whether kernel " + (kver.empty() ? std::string("?") : kver)
                             + " has the nvidia module (no module index under /lib/modules/" + kver
                             + "); the containers' cards need it: if it is missing, " + get);
    } else if (!*has) {
        plan.refusals.push_back(
            {"kernel " + kver + " has no nvidia module (/lib/modules/" + kver + "): the containers' cards need the host's nvidia driver",
             {get + ", reboot into it, and plan again"}});
    }
}

// The unit that makes the nodes at boot and the drop-in that runs it before
// pve-guests.service (docs/facts.md: nvidia-nodes).
void plan_node_unit(const PlanContext& ctx, const std::vector<ContainerCards>& containers,
                    const std::map<const scan::GpuCard*, std::uint32_t>& minors, Plan& plan)
{
    std::set<std::uint32_t> all;
    for (const auto& [card, minor] : minors) {
        all.insert(minor);
    }
    std::vector<std::string> ids;
    ids.reserve(containers.size());
    for (const auto& cc : containers) {
        ids.push_back(cc.request->ct);
    }
    std::string create = "-c 255";
    for (const auto m : all) {
        create += " -c " + std::to_string(m);
    }
    nlohmann::json values{{"containers", util::join(ids, ", ")},
                          {"nvidia_modprobe", std::string(k_nvidia_modprobe)},
                          {"create", create},
                          {"modeset", is_char_device(ctx.fs, "/dev/nvidia-modeset")},
                          {"service", std::string(k_nvidia_nodes_service)},
                          {"dropin", std::string(k_nvidia_nodes_dropin)}};
    const auto unit = render_or_refuse(ctx, plan, "passthru-nvidia-nodes.service.mustache", values);
    const auto dropin = render_or_refuse(ctx, plan, "passthru-nvidia-nodes-dropin.conf.mustache", values);
    if (!unit || !dropin) {
        return;
    }
    detail::stage_file(ctx, plan, k_nvidia_nodes_service, *unit,
                       {"makes /dev/nvidiactl, /dev/nvidiaM of every card on nvidia (" + create
                        + ") and the unified-memory nodes at boot: the nvidia driver makes no nodes itself, and pve-container "
                          "refuses to start a container whose devN: node does not exist"});
    detail::stage_file(ctx, plan, k_nvidia_nodes_dropin, *dropin,
                       {"runs passthru-nvidia-nodes.service before pve-guests.service starts the containers (onboot: 1), "
                        "with nothing to enable"});
    if (!ctx.fs.exists(k_nvidia_modprobe)) {
        plan.notes.push_back(std::string(k_nvidia_modprobe)
                             + " is not on the host: install nvidia-modprobe (Debian contrib; NVIDIA's "
                               "installer ships it too), or the nodes are not made at boot");
    }
    plan.notes.push_back("the nodes are made at the next boot; to make them now: systemctl daemon-reload && systemctl start "
                         "passthru-nvidia-nodes.service");
}

} // namespace

void plan_containers(const PlanContext& ctx, const std::vector<ContainerCards>& containers,
                     const std::vector<std::pair<const scan::GpuCard*, std::uint32_t>>& minors_after, Plan& plan)
{
    if (containers.empty()) {
        return;
    }
    const auto minors = minors_by_card(minors_after);
    for (const auto& cc : containers) {
        plan_container(ctx, cc, minors, plan);
    }
    check_nvidia_module(ctx, plan);
    if (!plan.refused()) {
        plan_node_unit(ctx, containers, minors, plan);
    }
}

} // namespace passthru::plan
