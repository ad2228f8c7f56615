// SPDX-License-Identifier: GPL-2.0-or-later
#include "explain/task_log.hpp"

#include "util/lex.hpp"

namespace passthru::explain {

namespace lex = util::lex;

namespace {

bool is_hex(char c)
{
    return lex::is_xdigit_lower(c) || (c >= 'A' && c <= 'F');
}

// A field of `n_min`..`n_max` hex digits; its value.
std::optional<std::uint64_t> hex_value(std::string_view field, std::size_t n_min, std::size_t n_max)
{
    if (field.size() < n_min || field.size() > n_max || !lex::all_of(field, is_hex)) {
        return std::nullopt;
    }
    std::uint64_t v = 0;
    for (const char c : field) {
        const int digit = lex::is_digit(c) ? c - '0' : (c >= 'a' ? c - 'a' + 10 : c - 'A' + 10);
        v = v * 16 + static_cast<std::uint64_t>(digit);
    }
    return v;
}

// Node names: letters and digits, '-' inside.
bool valid_node(std::string_view s)
{
    return lex::all_of(s, [](char c) { return lex::is_alnum(c) || c == '-'; }) && s.front() != '-' && s.back() != '-';
}

bool plain_field(std::string_view s, bool may_be_empty)
{
    if (s.empty()) {
        return may_be_empty;
    }
    return lex::all_of(s, [](char c) { return !lex::is_space(c) && c != ':' && c != '/'; });
}

std::vector<std::string_view> split_colons(std::string_view s)
{
    std::vector<std::string_view> out;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= s.size(); ++i) {
        if (i == s.size() || s[i] == ':') {
            out.push_back(s.substr(start, i - start));
            start = i + 1;
        }
    }
    return out;
}

} // namespace

std::optional<Upid> parse_upid(std::string_view text)
{
    // UPID : node : pid : pstart : starttime : type : id : user : (and nothing after the last ':')
    const auto f = split_colons(text);
    if (f.size() != 9 || f[0] != "UPID" || !f[8].empty() || !valid_node(f[1])) {
        return std::nullopt;
    }
    const auto pid = hex_value(f[2], 8, 8);
    const auto pstart = hex_value(f[3], 8, 9);
    const auto start = hex_value(f[4], 8, 8);
    if (!pid || !pstart || !start || !plain_field(f[5], false) || !plain_field(f[6], true) || !plain_field(f[7], false)) {
        return std::nullopt;
    }
    Upid u;
    u.text = std::string(text);
    u.node = std::string(f[1]);
    u.pid = *pid;
    u.pstart = *pstart;
    u.starttime = *start;
    u.subdir = f[4][7];
    u.type = std::string(f[5]);
    u.id = std::string(f[6]);
    u.user = std::string(f[7]);
    return u;
}

std::string task_log_path(const Upid& upid)
{
    return std::string(k_task_dir) + "/" + std::string(1, upid.subdir) + "/" + upid.text;
}

bool status_is_error(std::string_view status)
{
    if (status == "OK") {
        return false;
    }
    std::string_view rest = status;
    return !(lex::eat(rest, "WARNINGS: ") && lex::all_of(rest, lex::is_digit));
}

TaskIndex parse_task_index(std::string_view text, bool active)
{
    TaskIndex out;
    for (const auto& line : split_log_lines(text)) {
        std::string_view rest = line;
        const auto sp = rest.find(' ');
        const auto upid = parse_upid(rest.substr(0, sp));
        rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
        if (active && upid) {
            // SAVED (0|1), then the end time and status of a finished task.
            if (rest.empty() || (rest[0] != '0' && rest[0] != '1') || (rest.size() > 1 && rest[1] != ' ')) {
                ++out.unreadable_lines;
                continue;
            }
            rest.remove_prefix(std::min<std::size_t>(rest.size(), 2));
        }
        const auto sp2 = rest.find(' ');
        const auto end = hex_value(rest.substr(0, sp2), 8, 8);
        if (!upid || (!end && !(active && rest.empty()))) {
            ++out.unreadable_lines;
            continue;
        }
        TaskEntry e{*upid, end, sp2 == std::string_view::npos ? std::string() : std::string(rest.substr(sp2 + 1))};
        out.entries.push_back(std::move(e));
    }
    return out;
}

std::optional<TaskEntry> latest_task(const util::HostFs& fs, std::string_view type, std::string_view id, std::size_t& unreadable)
{
    std::optional<TaskEntry> best;
    for (const auto& list : k_task_lists) {
        const std::string path = std::string(k_task_dir) + "/" + std::string(list.name);
        auto text = fs.read_file(path);
        if (!text && text.error().code() == Errc::not_found) {
            continue; // no task of that kind yet
        }
        if (const auto kind = fs.stat(path).type; text && kind != util::FileType::regular && kind != util::FileType::symlink) {
            // a FIFO or device reads as nothing without blocking
            text = tl::unexpected(Error(Errc::io, "cannot read " + path + ": not a regular file"));
        }
        if (!text) {
            // A list that exists but cannot be read (permissions, not a
            // regular file, over the size limit) would hide a failed start.
            throw Error(Errc::io, "cannot read Proxmox VE's task list " + path + ": " + text.error().what())
                .with_hint("explain reads " + std::string(k_task_dir)
                           + "/index and active to find the VM's last start; make "
                             "them readable regular files (or pass --root a tree where they are)");
        }
        auto index = parse_task_index(*text, list.active);
        unreadable += index.unreadable_lines;
        for (auto& e : index.entries) {
            if (e.upid.type == type && e.upid.id == id && (!best || e.upid.starttime >= best->upid.starttime)) {
                // The same task in both files: the finished entry (with its status) wins.
                if (best && best->upid.text == e.upid.text && !e.endtime) {
                    continue;
                }
                best = std::move(e);
            }
        }
    }
    return best;
}

} // namespace passthru::explain
