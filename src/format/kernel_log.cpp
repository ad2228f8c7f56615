// SPDX-License-Identifier: GPL-2.0-or-later
#include "explain/kernel_log.hpp"

#include "explain/task_log.hpp"
#include "util/lex.hpp"

namespace passthru::explain {

namespace lex = util::lex;

namespace {

// "[    1.234567] " or "[Fri Nov 27 10:00:01 2026] " (dmesg -T): the rest.
bool eat_bracket_time(std::string_view& s)
{
    if (s.empty() || s[0] != '[') {
        return false;
    }
    const auto close = s.find(']');
    if (close > 40) { // npos too: no ']'
        return false;
    }
    s.remove_prefix(close + 1);
    lex::eat_span(s, lex::is_space);
    return true;
}

// "3,1234,5678901,-;" (and "3,1234,5678901,-,caller=T1;"): the record header of /dev/kmsg.
bool eat_kmsg_header(std::string_view& s)
{
    std::string_view t = s;
    for (int field = 0; field < 3; ++field) {
        if (lex::eat_span(t, lex::is_digit) == 0 || !lex::eat(t, ",")) {
            return false;
        }
    }
    const auto semi = t.find(';');
    if (semi > 64) { // npos too: no ';'
        return false;
    }
    s = t.substr(semi + 1);
    return true;
}

// "Nov 27 10:00:01 pve kernel: " (journalctl -k, syslog's kern.log) or an
// ISO time stamp before the host name ("2026-11-27T10:00:01.123+01:00 pve kernel: ").
bool eat_syslog_prefix(std::string_view& s)
{
    const auto at = s.find(" kernel: ");
    if (at > 64) { // npos too: not a syslog line
        return false;
    }
    s.remove_prefix(at + 9);
    return true;
}

// dmesg -x: "kern  :err   : ".
bool eat_facility_level(std::string_view& s)
{
    std::string_view t = s;
    if (lex::eat_span(t, lex::is_lower) == 0) {
        return false;
    }
    lex::eat_span(t, lex::is_space);
    if (!lex::eat(t, ":") || lex::eat_span(t, lex::is_lower) == 0) {
        return false;
    }
    lex::eat_span(t, lex::is_space);
    if (!lex::eat(t, ": ")) {
        return false;
    }
    s = t;
    return true;
}

} // namespace

std::optional<std::string> kernel_message(std::string_view line)
{
    if (line.empty() || line.front() == ' ' || line.starts_with("-- ")) {
        return std::nullopt; // a kmsg dictionary line, journalctl's boot separators
    }
    std::string_view s = line;
    if (!eat_kmsg_header(s)) {
        if (eat_syslog_prefix(s)) {
            eat_bracket_time(s); // kern.log may keep the time stamp inside the message
        } else {
            eat_facility_level(s);
            eat_bracket_time(s);
        }
    }
    if (s.empty()) {
        return std::nullopt;
    }
    return std::string(s);
}

Result<std::vector<std::string>> kernel_messages(std::string_view text, const std::string& what)
{
    if (text.find('\0') != std::string_view::npos) {
        return fail(Errc::usage, what + " is not a kernel log: it holds binary data (NUL bytes)");
    }
    std::vector<std::string> out;
    for (const auto& line : split_log_lines(text)) {
        if (auto msg = kernel_message(line)) {
            out.push_back(std::move(*msg));
        }
    }
    return out;
}

KernelLog read_host_kernel_log(const util::HostFs& fs)
{
    KernelLog out;
    if (fs.is_live()) {
        out.source = "/dev/kmsg";
        auto text = fs.read_records("/dev/kmsg", util::HostFs::k_max_file_bytes);
        if (!text) {
            out.note = std::string("the kernel ring buffer is unreadable (") + text.error().what() + "); give --kernel-log FILE";
            return out;
        }
        auto messages = kernel_messages(*text, "/dev/kmsg");
        out.messages = messages ? std::move(*messages) : std::vector<std::string>{};
        return out;
    }
    out.source = "/var/log/kern.log";
    if (fs.stat(out.source).type == util::FileType::missing) {
        out.note = "no kernel log under the root (/var/log/kern.log); give --kernel-log FILE";
        return out;
    }
    auto text = fs.read_file(out.source);
    if (!text) {
        out.note = std::string("cannot read ") + out.source + ": " + text.error().what();
        return out;
    }
    auto messages = kernel_messages(*text, out.source);
    if (!messages) {
        out.note = messages.error().what();
        return out;
    }
    out.messages = std::move(*messages);
    return out;
}

} // namespace passthru::explain
