// SPDX-License-Identifier: GPL-2.0-or-later
// Who uses each GPU card (scan/card_users.hpp). docs/facts.md: lxc-config, nvidia-nodes.
#include "scan/card_users.hpp"

#include <algorithm>

#include "format/lxc_config.hpp"
#include "format/pve_config.hpp"
#include "format/pve_mapping.hpp"
#include "util/lex.hpp"
#include "util/strings.hpp"

namespace passthru::scan {

namespace {

namespace lex = util::lex;
namespace lxc = format::lxc;

constexpr std::string_view k_qemu_conf_dir = "/etc/pve/qemu-server";
constexpr std::string_view k_lxc_conf_dir = "/etc/pve/lxc";
constexpr std::string_view k_pci_cfg = "/etc/pve/mapping/pci.cfg";
constexpr std::string_view k_drm_class = "/sys/class/drm";
// NVIDIA's reserved major and the last minor of a GPU (nv-chardev-numbers.h);
// 254 is nvidia-modeset, 255 nvidiactl.
constexpr std::uint32_t k_nvidia_major = 195;
constexpr std::uint32_t k_nvidia_gpu_minor_max = 247;

// A DRM node of /sys/class/drm (card0, renderD128) and the card it belongs to.
struct DrmNode
{
    std::string name;
    std::uint32_t major = 0;
    std::uint32_t minor = 0;
    std::string slot;
};

struct UsersCtx
{
    const util::HostFs& fs;
    Inventory& inv;
    std::uint32_t nvidia_major = k_nvidia_major;
    std::vector<DrmNode> drm;
};

std::vector<std::string> conf_names(const util::HostFs& fs, std::string_view dir)
{
    auto names = fs.list_dir(dir);
    if (!names) {
        return {};
    }
    std::sort(names->begin(), names->end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b; // numeric order of VMIDs
    });
    return std::move(*names);
}

std::optional<std::pair<std::uint32_t, std::uint32_t>> parse_dev_numbers(std::string_view text)
{
    text = util::trim(text);
    const auto colon = text.find(':');
    if (colon == std::string_view::npos) {
        return std::nullopt;
    }
    const auto maj = util::parse_int(text.substr(0, colon));
    const auto min = util::parse_int(text.substr(colon + 1));
    if (!maj || !min || *maj < 0 || *min < 0 || *maj > 0xfffff || *min > 0xfffff) {
        return std::nullopt;
    }
    return std::pair{static_cast<std::uint32_t>(*maj), static_cast<std::uint32_t>(*min)};
}

std::vector<DrmNode> read_drm_nodes(const util::HostFs& fs, const Inventory& inv)
{
    std::vector<DrmNode> out;
    const auto names = fs.list_dir(k_drm_class);
    if (!names) {
        return out;
    }
    for (const auto& name : *names) {
        if (!name.starts_with("card") && !name.starts_with("renderD")) {
            continue;
        }
        const std::string dir = std::string(k_drm_class) + "/" + name;
        const auto dev = fs.read_attr(dir + "/dev");
        const auto link = fs.read_link(dir + "/device");
        const auto numbers = dev ? parse_dev_numbers(*dev) : std::nullopt;
        if (!numbers || !link) {
            continue;
        }
        const auto slash = link->rfind('/');
        const auto address = PciAddress::parse(slash == std::string::npos ? *link : link->substr(slash + 1));
        if (!address || inv.gpu_of(*address) == nullptr) {
            continue;
        }
        out.push_back({name, numbers->first, numbers->second, address->slot()});
    }
    return out;
}

bool qemu_running(const RuntimeState& runtime, const std::string& vmid)
{
    const auto found = runtime.qemu_pid_files.find(vmid);
    if (found == runtime.qemu_pid_files.end() || !found->second.pid || !found->second.cmdline) {
        return false;
    }
    const auto& args = *found->second.cmdline;
    const std::string suffix = "/qemu-server/" + vmid + ".pid";
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] == "-pidfile" && args[i + 1].ends_with(suffix)) {
            return true;
        }
    }
    return false;
}

// The cards a character device major:minor is (an nvidia GPU node or a DRM node).
std::vector<GpuCard*> cards_of_rdev(UsersCtx& ctx, std::uint32_t dev_major, std::uint32_t dev_minor)
{
    std::vector<GpuCard*> out;
    for (auto& card : ctx.inv.gpus) {
        if (dev_major == ctx.nvidia_major && card.nvidia_minor == dev_minor) {
            out.push_back(&card);
        }
    }
    for (const auto& node : ctx.drm) {
        if (node.major == dev_major && node.minor == dev_minor) {
            for (auto& card : ctx.inv.gpus) {
                if (card.slot == node.slot && std::find(out.begin(), out.end(), &card) == out.end()) {
                    out.push_back(&card);
                }
            }
        }
    }
    return out;
}

struct NodeCards
{
    std::vector<GpuCard*> cards;
    std::string via;
};

// The cards a /dev path reaches: by the node the host has there (what pve-container
// stats), else by its name (/dev/nvidiaN is minor N, /dev/dri/NAME the DRM node NAME).
NodeCards cards_of_path(UsersCtx& ctx, const std::string& path)
{
    NodeCards out;
    const auto resolved = ctx.fs.resolve(path);
    const util::FileInfo info = ctx.fs.stat(resolved ? *resolved : path);
    if (info.char_device) {
        out.cards = cards_of_rdev(ctx, info.rdev_major, info.rdev_minor);
        out.via = path + " = c " + std::to_string(info.rdev_major) + ":" + std::to_string(info.rdev_minor);
        return out;
    }
    std::string_view name = path;
    if (lex::eat(name, "/dev/nvidia") && lex::all_of(name, lex::is_digit) && name.size() <= 3) {
        const auto minor = util::parse_int(name);
        if (minor && *minor <= k_nvidia_gpu_minor_max) {
            out.cards = cards_of_rdev(ctx, ctx.nvidia_major, static_cast<std::uint32_t>(*minor));
            out.via = path + " (no node on the host: by its name, minor " + std::string(name) + ")";
        }
        return out;
    }
    name = path;
    if (lex::eat(name, "/dev/dri/")) {
        if (name.empty()) {
            return out;
        }
        for (const auto& node : ctx.drm) {
            if (node.name == name) {
                auto cards = cards_of_rdev(ctx, node.major, node.minor);
                out.cards.insert(out.cards.end(), cards.begin(), cards.end());
                out.via = path + " (DRM node of " + node.slot + ")";
            }
        }
    }
    return out;
}

void add_user(GpuCard& card, CardUser user)
{
    for (const auto& u : card.users) {
        if (u.config == user.config && u.line == user.line) {
            return;
        }
    }
    card.users.push_back(std::move(user));
}

CardUser ct_user(const std::string& vmid, const std::string& path, const lxc::CtLine& line, bool running)
{
    CardUser user;
    user.kind = GuestKind::container;
    user.vmid = vmid;
    user.config = path;
    user.line = line.number;
    user.key = line.key;
    user.value = line.value;
    user.pending = line.section == lxc::k_pending_section;
    user.running = running;
    return user;
}

// lxc.cgroup2.devices.allow: the NVIDIA GPU and DRM nodes the rule lets the container open.
void ct_cgroup_rule(UsersCtx& ctx, const CardUser& base, const lxc::DeviceRule& rule)
{
    for (auto& card : ctx.inv.gpus) {
        std::string via;
        if (card.nvidia_minor && rule.covers_char(ctx.nvidia_major, *card.nvidia_minor)) {
            via = "allows c " + std::to_string(ctx.nvidia_major) + ":" + std::to_string(*card.nvidia_minor) + " (/dev/nvidia"
                  + std::to_string(*card.nvidia_minor) + ")";
        }
        for (const auto& node : ctx.drm) {
            if (via.empty() && node.slot == card.slot && rule.covers_char(node.major, node.minor)) {
                via = "allows c " + std::to_string(node.major) + ":" + std::to_string(node.minor) + " (/dev/dri/" + node.name + ")";
            }
        }
        if (!via.empty()) {
            CardUser user = base;
            user.via = via;
            user.wildcard = rule.type == 'a' || !rule.minor || !rule.major;
            add_user(card, std::move(user));
        }
    }
}

void scan_container(UsersCtx& ctx, const std::string& vmid, const std::string& path, const lxc::CtConfig& config)
{
    const auto& running = ctx.inv.runtime.running_containers;
    const bool runs = std::find(running.begin(), running.end(), vmid) != running.end();
    for (const auto& line : config.lines()) {
        if (!line.section.empty() && line.section != lxc::k_pending_section) {
            continue; // a snapshot is not started
        }
        const CardUser base = ct_user(vmid, path, line, runs);
        std::optional<std::string> node;
        bool whole_dri = false;
        if (line.kind == lxc::LineKind::key_value && lxc::dev_index(line.key)) {
            if (const auto dev = lxc::DevEntry::parse(line.value)) {
                node = dev->path;
            }
        } else if (line.kind == lxc::LineKind::raw_lxc && line.key == "lxc.mount.entry") {
            node = lxc::mount_entry_source(line.value);
            whole_dri = node == "/dev/dri" || node == "/dev/dri/";
        } else if (line.kind == lxc::LineKind::raw_lxc && line.key == "lxc.cgroup2.devices.allow") {
            if (const auto rule = lxc::DeviceRule::parse(line.value)) {
                ct_cgroup_rule(ctx, base, *rule);
            }
            continue;
        }
        if (!node || !node->starts_with("/dev/")) {
            continue;
        }
        if (whole_dri) {
            for (const auto& drm : ctx.drm) {
                for (auto* card : cards_of_rdev(ctx, drm.major, drm.minor)) {
                    CardUser user = base;
                    user.via = "/dev/dri (every DRM node, " + drm.name + " of " + card->slot + ")";
                    user.wildcard = true;
                    add_user(*card, std::move(user));
                }
            }
            continue;
        }
        const NodeCards found = cards_of_path(ctx, *node);
        for (auto* card : found.cards) {
            CardUser user = base;
            user.via = found.via;
            add_user(*card, std::move(user));
        }
    }
}

// The 1-based line of `key:` in the current config or in [PENDING]; 0 when not found.
std::size_t vm_line_of(std::string_view text, std::string_view key, bool pending)
{
    std::size_t number = 0;
    bool in_pending = false;
    bool in_current = true;
    for (const auto& line : util::split_lines(text)) {
        ++number;
        if (line.starts_with('[')) {
            in_current = false;
            in_pending = line.starts_with("[PENDING]");
            continue;
        }
        if ((pending ? in_pending : in_current) && line.starts_with(key) && line.size() > key.size() && line[key.size()] == ':') {
            return number;
        }
    }
    return 0;
}

void scan_vm(UsersCtx& ctx, const std::string& vmid, const std::string& path, const std::string& text,
             const format::pve::PciMappingFile* mappings)
{
    const auto config = format::pve::VmConfig::parse(text);
    const bool runs = qemu_running(ctx.inv.runtime, vmid);
    for (const bool pending : {false, true}) {
        for (const auto& [key, value, ids] :
             format::pve::passed_ids(config, pending ? "PENDING" : "", mappings, ctx.inv.runtime.node_name)) {
            for (auto& card : ctx.inv.gpus) {
                for (const auto& id : ids) {
                    const bool covers = std::any_of(card.functions.begin(), card.functions.end(),
                                                    [&](const PciAddress& fn) { return format::pve::hostpci_id_covers(id, fn.str()); });
                    if (!covers) {
                        continue;
                    }
                    CardUser user;
                    user.kind = GuestKind::vm;
                    user.vmid = vmid;
                    user.config = path;
                    user.line = vm_line_of(text, key, pending);
                    user.key = key;
                    user.value = value;
                    user.pending = pending;
                    user.running = runs;
                    user.via = value.find("mapping=") != std::string::npos ? "mapping path " + id : "address " + id;
                    add_user(card, std::move(user));
                    break;
                }
            }
        }
    }
}

void read_nvidia_state(UsersCtx& ctx)
{
    if (const auto devices = ctx.fs.read_file("/proc/devices")) {
        ctx.inv.host.char_majors = parse_char_majors(*devices);
    }
    if (const auto version = ctx.fs.read_file("/proc/driver/nvidia/version")) {
        ctx.inv.host.nvidia_loaded = true;
        ctx.inv.host.nvidia_version = nvidia_module_version(*version);
    }
    if (const auto it = ctx.inv.host.char_majors.find("nvidia"); it != ctx.inv.host.char_majors.end()) {
        ctx.nvidia_major = it->second;
    }
    for (auto& card : ctx.inv.gpus) {
        for (const auto& fn : card.functions) {
            const PciDevice* dev = ctx.inv.find(fn);
            if (dev == nullptr || !dev->is_display()) {
                continue;
            }
            if (!card.driver) {
                card.driver = dev->driver;
            }
            if (dev->driver == "nvidia" && !card.nvidia_minor) {
                if (const auto info = ctx.fs.read_file("/proc/driver/nvidia/gpus/" + fn.str() + "/information")) {
                    card.nvidia_minor = parse_nvidia_minor(*info);
                }
            }
        }
    }
}

} // namespace

std::map<std::string, std::uint32_t> parse_char_majors(std::string_view proc_devices)
{
    std::map<std::string, std::uint32_t> out;
    bool character = false;
    for (const auto& line : util::split_lines(proc_devices)) {
        if (line == "Character devices:") {
            character = true;
            continue;
        }
        if (line == "Block devices:") {
            character = false;
            continue;
        }
        const auto fields = util::split(line, " \t");
        if (!character || fields.size() != 2) {
            continue;
        }
        const auto number = util::parse_int(fields[0]);
        if (number && *number >= 0 && *number <= 0xfff && !out.contains(fields[1])) {
            out.emplace(fields[1], static_cast<std::uint32_t>(*number));
        }
    }
    return out;
}

std::optional<std::uint32_t> parse_nvidia_minor(std::string_view information)
{
    for (const auto& line : util::split_lines(information)) {
        std::string_view rest = line;
        if (!lex::eat(rest, "Device Minor:")) {
            continue;
        }
        const auto n = util::parse_int(util::trim(rest));
        if (n && *n >= 0 && *n <= k_nvidia_gpu_minor_max) {
            return static_cast<std::uint32_t>(*n);
        }
        return std::nullopt;
    }
    return std::nullopt;
}

std::optional<std::string> nvidia_module_version(std::string_view proc_version)
{
    for (const auto& line : util::split_lines(proc_version)) {
        const auto at = line.find("Kernel Module");
        if (!line.starts_with("NVRM version:") || at == std::string::npos) {
            continue;
        }
        // The first version-like field after it ("Open Kernel Module for x86_64  570.86.15").
        for (const auto& field : util::split(std::string_view(line).substr(at + 13), " \t")) {
            if (!field.empty() && lex::is_digit(field.front()) && field.find('.') != std::string::npos
                && lex::all_of(field, [](char ch) { return lex::is_digit(ch) || ch == '.'; })) {
                return field;
            }
        }
    }
    return std::nullopt;
}

void scan_card_users(const util::HostFs& fs, Inventory& inventory)
{
    UsersCtx ctx{fs, inventory, k_nvidia_major, {}};
    read_nvidia_state(ctx);
    ctx.drm = read_drm_nodes(fs, inventory);
    std::optional<format::pve::PciMappingFile> mappings;
    if (const auto text = fs.read_file(k_pci_cfg)) {
        mappings = format::pve::PciMappingFile::parse(*text);
    }
    for (const auto& name : conf_names(fs, k_qemu_conf_dir)) {
        const auto vmid = guest_conf_vmid(name);
        const std::string path = std::string(k_qemu_conf_dir) + "/" + name;
        if (!vmid) {
            continue;
        }
        if (const auto text = fs.read_file(path)) {
            scan_vm(ctx, *vmid, path, *text, mappings ? &*mappings : nullptr);
        }
    }
    for (const auto& name : conf_names(fs, k_lxc_conf_dir)) {
        const auto vmid = guest_conf_vmid(name);
        const std::string path = std::string(k_lxc_conf_dir) + "/" + name;
        if (!vmid) {
            continue;
        }
        if (const auto text = fs.read_file(path)) {
            scan_container(ctx, *vmid, path, lxc::CtConfig::parse(*text));
        }
    }
}

std::string card_owner(const GpuCard& card)
{
    std::vector<std::string> vms;
    std::vector<std::string> cts;
    for (const auto& u : card.users) {
        if (u.pending || u.wildcard) {
            continue;
        }
        auto& list = u.kind == GuestKind::vm ? vms : cts;
        if (std::find(list.begin(), list.end(), u.vmid) == list.end()) {
            list.push_back(u.vmid);
        }
    }
    const std::string driver = card.driver.value_or("no driver");
    if (!vms.empty() && (driver == "vfio-pci" || cts.empty())) {
        return std::string(vms.size() == 1 ? "VM " : "VMs ") + util::join(vms, ", ");
    }
    if (!cts.empty()) {
        return std::string(cts.size() == 1 ? "container " : "containers ") + util::join(cts, ", ") + " (" + driver + ")";
    }
    return "host (" + driver + ")";
}

std::optional<std::string> guest_conf_vmid(std::string_view name)
{
    if (!name.ends_with(".conf")) {
        return std::nullopt;
    }
    name.remove_suffix(5);
    if (name.size() < 3 || name.size() > 9 || name.front() == '0' || !lex::all_of(name, lex::is_digit)) {
        return std::nullopt;
    }
    return std::string(name);
}

} // namespace passthru::scan
