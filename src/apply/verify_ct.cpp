// SPDX-License-Identifier: GPL-2.0-or-later
// passthru verify --ct N (apply/verify_ct.hpp). docs/facts.md: lxc-config,
// nvidia-nodes, ct-devices. The helpers carry a ct_ prefix: unity builds put
// this file beside verify.cpp and scan/card_users.cpp.
#include "apply/verify_ct.hpp"

#include <algorithm>
#include <set>

#include "format/lxc_config.hpp"
#include "util/lex.hpp"
#include "util/strings.hpp"

namespace passthru::apply {

namespace {

namespace lex = util::lex;
namespace lxc = format::lxc;

// nv-chardev-numbers.h: major 195, GPUs 0-247, nvidia-modeset 254, nvidiactl 255;
// nvidia-modprobe makes nvidia-uvm at minor 0 and nvidia-uvm-tools at 1 of nvidia-uvm's major.
constexpr std::uint32_t k_ct_nvidia_major = 195;
constexpr std::uint32_t k_ct_gpu_minor_max = 247;
constexpr std::uint32_t k_ct_modeset_minor = 254;
constexpr std::uint32_t k_ct_ctl_minor = 255;
constexpr std::string_view k_ct_proc_version = "/proc/driver/nvidia/version";

enum class CtNode
{
    gpu,
    ctl,
    modeset,
    uvm,
    uvm_tools,
    caps,
};

// What a node must be on the host.
struct CtWant
{
    CtNode kind = CtNode::gpu;
    std::uint32_t major = 0;
    std::uint32_t minor = 0;
    std::string card; // gpu: the card's slot
};

// A line of the config that names a node.
struct CtNodeLine
{
    std::string host_path;   // the node on the host
    std::string inside_path; // the node inside the container
    std::string where;       // "dev0 (line 3)"
    bool devn = false;       // a devN: line (pve-container adds its cgroup rule)
    bool optional = false;   // a mount entry with "optional": lxc starts without it
};

struct CtRule
{
    lxc::DeviceRule rule;
    std::string where; // "line 10"
};

struct CtChecks
{
    VerifyReport& rep;
    void add(bool ok, std::string what, std::string fix = {}) const
    {
        rep.checks.push_back(VerifyCheck{ok, std::move(what), ok ? std::string() : std::move(fix)});
    }
    void note(std::string what) const { rep.checks.push_back(VerifyCheck{true, std::move(what), {}, true}); }
};

struct CtCtx
{
    const scan::Inventory& inv;
    const util::HostFs& fs;
    std::string id;
    std::string conf;
    const CtChecks& c;
    std::uint32_t nvidia_major = k_ct_nvidia_major;
    std::optional<std::uint32_t> uvm_major;
    std::optional<std::uint32_t> caps_major;
    std::vector<CtNodeLine> nodes;
    std::vector<CtRule> rules;
};

std::string ct_rdev(std::uint32_t major, std::uint32_t minor)
{
    return "c " + std::to_string(major) + ":" + std::to_string(minor);
}

std::optional<std::uint32_t> ct_major_named(const scan::Inventory& inv, const std::string& name)
{
    const auto it = inv.host.char_majors.find(name);
    return it == inv.host.char_majors.end() ? std::nullopt : std::optional<std::uint32_t>(it->second);
}

// "0000:81:00 /dev/nvidia0, 0000:82:00 /dev/nvidia1": the cards on nvidia and their nodes.
std::string ct_nvidia_cards(const scan::Inventory& inv)
{
    std::vector<std::string> out;
    for (const auto& card : inv.gpus) {
        if (card.nvidia_minor) {
            out.push_back(card.slot + " /dev/nvidia" + std::to_string(*card.nvidia_minor));
        }
    }
    return out.empty() ? std::string("none") : util::join(out, ", ");
}

bool ct_has_option(std::string_view options, std::string_view name)
{
    const auto opts = util::split(options, ",");
    return std::find(opts.begin(), opts.end(), name) != opts.end();
}

// The NVIDIA lines of the current config (not pending, not a snapshot).
void ct_collect_lines(CtCtx& ctx, const lxc::CtConfig& config)
{
    for (const auto& line : config.lines()) {
        if (!line.section.empty()) {
            continue;
        }
        const std::string at = "line " + std::to_string(line.number);
        if (line.kind == lxc::LineKind::key_value && lxc::dev_index(line.key)) {
            if (const auto dev = lxc::DevEntry::parse(line.value); dev && dev->path.starts_with("/dev/nvidia")) {
                ctx.nodes.push_back({dev->path, dev->path, line.key + " (" + at + ")", true, false});
            }
        } else if (line.kind == lxc::LineKind::raw_lxc && line.key == "lxc.mount.entry") {
            const auto fields = util::split(line.value, " \t");
            if (fields.size() >= 4 && fields[0].starts_with("/dev/nvidia")) {
                const std::string inside = fields[1].starts_with('/') ? fields[1] : "/" + fields[1];
                ctx.nodes.push_back({fields[0], inside, "lxc.mount.entry (" + at + ")", false, ct_has_option(fields[3], "optional")});
            }
        } else if (line.kind == lxc::LineKind::raw_lxc && line.key == "lxc.cgroup2.devices.allow") {
            if (const auto rule = lxc::DeviceRule::parse(line.value)) {
                ctx.rules.push_back({*rule, at});
            }
        }
    }
}

// What the node at `path` must be; nullopt (with a check said) when it cannot be right on this host.
std::optional<CtWant> ct_want(const CtCtx& ctx, const CtNodeLine& node)
{
    std::string_view rest = node.host_path;
    const std::string in = node.host_path + " (" + node.where + ")";
    if (rest == "/dev/nvidiactl") {
        return CtWant{CtNode::ctl, ctx.nvidia_major, k_ct_ctl_minor, {}};
    }
    if (rest == "/dev/nvidia-modeset") {
        return CtWant{CtNode::modeset, ctx.nvidia_major, k_ct_modeset_minor, {}};
    }
    if (rest == "/dev/nvidia-uvm" || rest == "/dev/nvidia-uvm-tools") {
        if (!ctx.uvm_major) {
            ctx.c.add(false, in + ": the host has no nvidia-uvm device (no nvidia-uvm in /proc/devices): CUDA inside fails",
                      "load the module and make its nodes: modprobe nvidia-uvm && nvidia-modprobe -u -c 0 (as root); to have it at "
                      "every boot, list nvidia-uvm in /etc/modules-load.d/");
            return std::nullopt;
        }
        return CtWant{rest == "/dev/nvidia-uvm" ? CtNode::uvm : CtNode::uvm_tools, *ctx.uvm_major, rest == "/dev/nvidia-uvm" ? 0U : 1U, {}};
    }
    if (lex::eat(rest, "/dev/nvidia-caps/nvidia-cap") && !rest.empty() && rest.size() <= 6 && lex::all_of(rest, lex::is_digit)) {
        if (!ctx.caps_major) {
            ctx.c.add(false, in + ": the host has no nvidia-caps device (no nvidia-caps in /proc/devices)",
                      "load the nvidia driver (modprobe nvidia); nvidia-modprobe -f /proc/driver/nvidia/capabilities/... makes the node");
            return std::nullopt;
        }
        return CtWant{CtNode::caps, *ctx.caps_major, static_cast<std::uint32_t>(std::stoul(std::string(rest))), {}};
    }
    rest = node.host_path;
    if (lex::eat(rest, "/dev/nvidia") && !rest.empty() && rest.size() <= 3 && lex::all_of(rest, lex::is_digit)) {
        const auto minor = static_cast<std::uint32_t>(std::stoul(std::string(rest)));
        for (const auto& card : ctx.inv.gpus) {
            if (card.nvidia_minor == minor && minor <= k_ct_gpu_minor_max) {
                return CtWant{CtNode::gpu, ctx.nvidia_major, minor, card.slot};
            }
        }
        ctx.c.add(false,
                  in + ": no card on the nvidia driver has minor " + std::string(rest) + " (cards on nvidia: " + ct_nvidia_cards(ctx.inv)
                      + ")",
                  "point the line at the node of the card the container should have (pct set " + ctx.id
                      + " --devN /dev/nvidiaM, with the container stopped), or give that card back to nvidia; 'passthru scan' shows "
                        "each card's driver and node");
        return std::nullopt;
    }
    ctx.c.note(in + ": not an NVIDIA node passthru knows; not checked");
    return std::nullopt;
}

// How to make a missing or wrong node again.
std::string ct_make_node(const CtWant& want, const std::string& path)
{
    switch (want.kind) {
    case CtNode::gpu:
        return "nvidia-modprobe -c " + std::to_string(want.minor) + " (as root; it also makes /dev/nvidiactl), or run nvidia-smi once";
    case CtNode::ctl:
        return "nvidia-modprobe -c 0 (as root), or run nvidia-smi once";
    case CtNode::modeset:
        return "nvidia-modprobe -m (as root)";
    case CtNode::uvm:
    case CtNode::uvm_tools:
        return "nvidia-modprobe -u -c 0 (as root: loads nvidia-uvm, makes /dev/nvidia-uvm and /dev/nvidia-uvm-tools)";
    case CtNode::caps:
        return "nvidia-modprobe -f /proc/driver/nvidia/capabilities/... for " + path + " (as root)";
    }
    return "nvidia-modprobe";
}

std::string ct_at_boot()
{
    return "; so that it exists at every boot before pve-guests.service starts the containers, run the same from a "
           "oneshot unit ordered Before=pve-guests.service";
}

// The node on the host: a character device with the numbers it must have.
void ct_check_host_node(const CtCtx& ctx, const CtNodeLine& node, const CtWant& want)
{
    const std::string in = node.host_path + " (" + node.where + ")";
    const auto resolved = ctx.fs.resolve(node.host_path);
    const util::FileInfo info = ctx.fs.stat(resolved ? *resolved : node.host_path);
    const std::string card = want.card.empty() ? std::string() : ", card " + want.card;
    if (info.type == util::FileType::missing) {
        const std::string effect = node.devn       ? "pct start fails with \"Device " + node.host_path + " does not exist\""
                                   : node.optional ? "the container starts without it (the mount entry is optional)"
                                                   : "lxc fails to mount it and the container does not start";
        ctx.c.add(false, in + " does not exist on the host: " + effect, "make it: " + ct_make_node(want, node.host_path) + ct_at_boot());
        return;
    }
    if (!info.char_device) {
        ctx.c.add(false, in + " on the host is not a character device",
                  "remove what is there (rm " + node.host_path + ") and make the node: " + ct_make_node(want, node.host_path));
        return;
    }
    if (info.rdev_major != want.major || info.rdev_minor != want.minor) {
        ctx.c.add(false,
                  in + " on the host is " + ct_rdev(info.rdev_major, info.rdev_minor) + ", not " + ct_rdev(want.major, want.minor) + card
                      + ": the container would reach another device",
                  "the node is stale: remove it (rm " + node.host_path + ") and make it again: " + ct_make_node(want, node.host_path));
        return;
    }
    ctx.c.add(true, in + " is " + ct_rdev(want.major, want.minor) + " on the host" + card);
}

// A bind-mounted node needs an lxc.cgroup2.devices.allow rule (a devN: line gets one from pve-container).
void ct_check_allowed(const CtCtx& ctx, const CtNodeLine& node, const CtWant& want)
{
    if (node.devn) {
        return;
    }
    const auto rule = std::find_if(ctx.rules.begin(), ctx.rules.end(), [&](const CtRule& r) {
        return r.rule.covers_char(want.major, want.minor) && r.rule.access.find('r') != std::string::npos;
    });
    if (rule != ctx.rules.end()) {
        ctx.c.add(true, node.host_path + " (" + node.where + ") is allowed by the cgroup rule on " + rule->where);
        return;
    }
    ctx.c.add(false,
              node.host_path + " (" + node.where + ") is bound in, but no lxc.cgroup2.devices.allow line allows "
                  + ct_rdev(want.major, want.minor) + ": opening it inside fails with EPERM",
              "add 'lxc.cgroup2.devices.allow: " + ct_rdev(want.major, want.minor) + " rwm' to " + ctx.conf
                  + " (with the container stopped), or pass the node with a devN: line instead (pct set " + ctx.id + " --devN "
                  + node.host_path + ")");
}

// A rule that names one minor of the nvidia major must name a card on nvidia (or nvidiactl, nvidia-modeset).
void ct_check_rules(const CtCtx& ctx)
{
    for (const auto& r : ctx.rules) {
        if (r.rule.type != 'c' || r.rule.major != ctx.nvidia_major || !r.rule.minor || *r.rule.minor > k_ct_gpu_minor_max) {
            continue;
        }
        const bool card =
            std::any_of(ctx.inv.gpus.begin(), ctx.inv.gpus.end(), [&](const scan::GpuCard& g) { return g.nvidia_minor == r.rule.minor; });
        if (!card) {
            ctx.c.add(false,
                      "the cgroup rule on " + r.where + " allows " + ct_rdev(ctx.nvidia_major, *r.rule.minor)
                          + ", but no card on the nvidia driver has minor " + std::to_string(*r.rule.minor)
                          + " (cards on nvidia: " + ct_nvidia_cards(ctx.inv) + ")",
                      "change it in " + ctx.conf + " to the minor of the card the container should have (the card's /dev/nvidiaM)");
        }
    }
}

// Why an open failed inside, from dd's message.
std::string ct_open_fix(const CtCtx& ctx, const CtNodeLine& node, const std::string& output)
{
    if (output.find("Operation not permitted") != std::string::npos) {
        return "the container's device cgroup denies it (EPERM): "
               + (node.devn
                      ? "pve-container allows a devN: node at start from the host node's numbers; restart the container (pct reboot "
                            + ctx.id + ") now that the host node is right"
                      : "add its lxc.cgroup2.devices.allow line to " + ctx.conf + " and restart the container (pct reboot " + ctx.id + ")");
    }
    if (output.find("No such device or address") != std::string::npos) {
        return "the node is allowed, but no driver answers its numbers (ENXIO): the card left the nvidia driver or its minor changed "
               "since the container started; check 'passthru scan' and restart the container (pct reboot "
               + ctx.id + ")";
    }
    if (output.find("No such file") != std::string::npos) {
        return "the node is missing inside: it was made on the host after the container started; restart the container (pct reboot "
               + ctx.id + ")";
    }
    return "check the node inside (pct exec " + ctx.id + " -- ls -l " + node.inside_path + ") and restart the container";
}

// Each node that is right on the host opens inside: dd opens its input and reads nothing (count=0).
void ct_check_opens(const CtCtx& ctx, const std::vector<const CtNodeLine*>& nodes, const CtExec& exec)
{
    std::set<std::string> done;
    for (const auto* node : nodes) {
        if (!done.insert(node->inside_path).second) {
            continue;
        }
        const auto r = exec({"dd", "if=" + node->inside_path, "of=/dev/null", "bs=1", "count=0"});
        const std::string in = node->inside_path + " inside container " + ctx.id;
        if (!r) {
            ctx.c.add(false, in + ": dd cannot run there (" + std::string(r.error().what()) + ")",
                      "check that the container has coreutils' dd, or open the node by hand: pct exec " + ctx.id + " -- ls -l "
                          + node->inside_path);
        } else if (r->exit_code == 0) {
            ctx.c.add(true, in + " opens");
        } else {
            const std::string said(util::trim(r->output.substr(0, 300)));
            ctx.c.add(false, in + " does not open: " + said, ct_open_fix(ctx, *node, r->output));
        }
    }
}

// The NVIDIA userspace inside is the host module's version.
void ct_check_userspace(const CtCtx& ctx, const std::string& host_version, const CtExec& exec)
{
    const auto r = exec(k_ct_userspace_probe);
    const std::string install = "install the NVIDIA userspace of exactly " + host_version
                                + " inside, without its kernel module: NVIDIA's NVIDIA-Linux-x86_64-" + host_version
                                + ".run --no-kernel-module (or the distribution's packages of that very version)";
    if (!r) {
        ctx.c.add(false, "the NVIDIA userspace inside container " + ctx.id + " was not read (" + std::string(r.error().what()) + ")",
                  "check that the container has /bin/sh; " + install);
        return;
    }
    const auto versions = nvml_library_versions(r->output);
    if (versions.empty()) {
        ctx.c.add(false, "container " + ctx.id + " has no NVIDIA userspace (no libnvidia-ml.so.*): nvidia-smi and CUDA cannot work",
                  install);
        return;
    }
    if (versions.size() == 1 && versions.front() == host_version) {
        ctx.c.add(true, "the NVIDIA userspace inside container " + ctx.id + " is " + host_version + ", the host module's version");
        return;
    }
    ctx.c.add(false,
              "the NVIDIA userspace inside container " + ctx.id + " is " + util::join(versions, ", ") + ", the host module is "
                  + host_version + ": nvidia-smi says \"Failed to initialize NVML: Driver/library version mismatch\"",
              "remove the other version's libraries inside and " + install);
}

} // namespace

Result<VerifyReport> verify_container(const scan::Inventory& inventory, const util::HostFs& fs, std::uint64_t ctid, const CtExec& exec)
{
    const std::string id = std::to_string(ctid);
    const std::string conf = "/etc/pve/lxc/" + id + ".conf";
    const auto text = fs.read_file(conf);
    if (!text) {
        return fail(Errc::not_found, "container " + id + " has no config (" + conf + ")");
    }
    VerifyReport rep;
    rep.iommu_on = true; // a container needs no IOMMU
    const CtChecks c{rep};
    CtCtx ctx{inventory, fs, id, conf, c, k_ct_nvidia_major, std::nullopt, std::nullopt, {}, {}};
    ctx.nvidia_major = ct_major_named(inventory, "nvidia").value_or(k_ct_nvidia_major);
    ctx.uvm_major = ct_major_named(inventory, "nvidia-uvm");
    ctx.caps_major = ct_major_named(inventory, "nvidia-caps");
    ct_collect_lines(ctx, lxc::CtConfig::parse(*text));
    const auto& host_version = inventory.host.nvidia_version;
    if (host_version) {
        c.add(true, "the host's nvidia module is " + *host_version + " (" + std::string(k_ct_proc_version) + ")");
    } else {
        c.add(false, "the nvidia driver is not loaded on the host (no version in " + std::string(k_ct_proc_version) + ")",
              "load it (modprobe nvidia); without a module for the running kernel, install one: Debian's nvidia-driver from "
              "non-free, or NVIDIA's installer");
    }
    if (ctx.nodes.empty()) {
        c.add(false, "container " + id + "'s config (" + conf + ") names no NVIDIA device node (devN: or lxc.mount.entry for /dev/nvidia*)",
              "give it cards: passthru plan --ct " + id + " --gpus SEL, or pct set " + id
                  + " --dev0 /dev/nvidiaM --dev1 /dev/nvidiactl --dev2 /dev/nvidia-uvm --dev3 /dev/nvidia-uvm-tools");
        return rep;
    }
    std::vector<const CtNodeLine*> right;
    for (const auto& node : ctx.nodes) {
        const std::size_t before = rep.checks.size();
        if (const auto want = ct_want(ctx, node)) {
            ct_check_host_node(ctx, node, *want);
            const bool node_ok = rep.checks.size() > before && rep.checks.back().ok;
            ct_check_allowed(ctx, node, *want);
            if (node_ok) {
                right.push_back(&node);
            }
        }
    }
    ct_check_rules(ctx);
    const auto& running = inventory.runtime.running_containers;
    if (std::find(running.begin(), running.end(), id) == running.end()) {
        c.note("container " + id + " is not running: the nodes and the NVIDIA userspace inside are not checked (pct start " + id
               + ", then verify again)");
    } else if (!exec) {
        c.note("container " + id + " runs, but its inside is not checked under --root (pct exec needs the live host)");
    } else {
        ct_check_opens(ctx, right, exec);
        if (host_version) {
            ct_check_userspace(ctx, *host_version, exec);
        }
    }
    return rep;
}

std::vector<std::string> nvml_library_versions(std::string_view listing)
{
    constexpr std::string_view lib = "libnvidia-ml.so.";
    std::vector<std::string> out;
    for (const auto& line : util::split_lines(listing)) {
        const auto at = line.rfind(lib);
        if (at == std::string::npos) {
            continue;
        }
        const std::string version = line.substr(at + lib.size());
        const bool ok = !version.empty() && version.find('.') != std::string::npos && lex::is_digit(version.front())
                        && lex::all_of(version, [](char ch) { return lex::is_digit(ch) || ch == '.'; });
        if (ok && std::find(out.begin(), out.end(), version) == out.end()) {
            out.push_back(version);
        }
    }
    return out;
}

const std::vector<std::string> k_ct_userspace_probe = {
    "/bin/sh", "-c",
    "for f in /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.* /usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.* "
    "/usr/lib64/libnvidia-ml.so.* /usr/lib/libnvidia-ml.so.*; do [ -e \"$f\" ] && echo \"$f\"; done; exit 0"};

} // namespace passthru::apply
