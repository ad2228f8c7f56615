// SPDX-License-Identifier: GPL-2.0-or-later
// The running host's state that plan decides from (scan::RuntimeState): its
// routes and IPv6 addresses, qemu-server's pid files and the processes they
// name, the node name, storage.cfg and the cluster's VM list. Read through
// HostFs, so under --root they are the root's copies.
#include <algorithm>
#include <string>
#include <vector>

#include "format/pve_mapping.hpp"
#include "scan/scanner.hpp"
#include "util/strings.hpp"

namespace passthru::scan {

namespace {

// qemu-server keeps a running VM's QEMU pid in /run/qemu-server/<VMID>.pid.
constexpr std::string_view k_qemu_pid_dir = "/run/qemu-server";

std::optional<std::string> read_text(const util::HostFs& fs, std::string_view path)
{
    auto text = fs.read_file(path);
    return text ? std::optional<std::string>(std::move(*text)) : std::nullopt;
}

// A process's command line: its arguments, each ended by a NUL (the last one
// may lack it).
std::vector<std::string> split_cmdline(const std::string& text)
{
    std::vector<std::string> args;
    std::string current;
    for (const char ch : text) {
        if (ch == '\0') {
            args.push_back(current);
            current.clear();
        } else {
            current += ch;
        }
    }
    if (!current.empty()) {
        args.push_back(current);
    }
    return args;
}

QemuPidFile read_pid_file(const util::HostFs& fs, const std::string& path)
{
    QemuPidFile file;
    const auto text = fs.read_attr(path);
    const auto pid = text ? util::parse_int(*text) : std::nullopt;
    if (!pid || *pid <= 0) {
        return file;
    }
    file.pid = *pid;
    if (auto cmdline = fs.read_file("/proc/" + std::to_string(*pid) + "/cmdline")) {
        file.cmdline = split_cmdline(*cmdline);
    }
    return file;
}

std::map<std::string, QemuPidFile> read_qemu_pid_files(const util::HostFs& fs)
{
    std::map<std::string, QemuPidFile> out;
    const auto names = fs.list_dir(k_qemu_pid_dir);
    if (!names) {
        return out;
    }
    for (const auto& name : *names) {
        // append, not operator+: GCC 12 at -O2 reads the inlined move of a temporary
        // string as out of bounds (-Warray-bounds) in the Release build.
        std::string path(k_qemu_pid_dir);
        path.append("/").append(name);
        if (name.size() > 4 && name.ends_with(".pid") && fs.exists(path)) {
            out.emplace(name.substr(0, name.size() - 4), read_pid_file(fs, path));
        }
    }
    return out;
}

// pve-container's list_active_containers: a line of /proc/net/unix whose 8th field
// (the path) is the abstract socket @/var/lib/lxc/<vmid>/command of a running container.
std::vector<std::string> read_running_containers(const util::HostFs& fs)
{
    std::vector<std::string> out;
    const auto text = fs.read_file("/proc/net/unix");
    if (!text) {
        return out;
    }
    constexpr std::string_view prefix = "@/var/lib/lxc/";
    constexpr std::string_view suffix = "/command";
    for (const auto& line : util::split_lines(*text)) {
        const auto fields = util::split(line, " \t");
        if (fields.size() != 8 || !fields[0].ends_with(':')) {
            continue;
        }
        const std::string_view path = fields[7];
        if (!path.starts_with(prefix) || !path.ends_with(suffix) || path.size() <= prefix.size() + suffix.size()) {
            continue;
        }
        const std::string_view id = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
        if (std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })
            && std::find(out.begin(), out.end(), id) == out.end()) {
            out.emplace_back(id);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace

RuntimeState scan_runtime_state(const util::HostFs& fs)
{
    RuntimeState state;
    state.live = fs.is_live();
    state.route_v4 = read_text(fs, "/proc/net/route");
    state.route_v6 = read_text(fs, "/proc/net/ipv6_route");
    state.inet6_addresses = read_text(fs, "/proc/net/if_inet6");
    state.qemu_pid_files = read_qemu_pid_files(fs);
    if (const auto hostname = fs.read_attr("/etc/hostname")) {
        state.node_name = format::pve::node_name_from_hostname(*hostname);
    }
    state.storage_cfg = read_text(fs, "/etc/pve/storage.cfg");
    state.vmlist = read_text(fs, "/etc/pve/.vmlist");
    state.running_containers = read_running_containers(fs);
    return state;
}

} // namespace passthru::scan
