// SPDX-License-Identifier: GPL-2.0-or-later
#include "format/kernel_log.hpp"

#include <algorithm>
#include <deque>

#include "util/lex.hpp"

namespace passthru::format::kernel_log {

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

std::vector<std::string> split_log_lines(std::string_view text)
{
    std::deque<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        auto nl = text.find('\n', start);
        if (nl == std::string_view::npos) {
            nl = text.size();
        }
        std::string_view raw = text.substr(start, std::min(nl - start, k_max_line_bytes));
        if (!raw.empty() && raw.back() == '\r') {
            raw.remove_suffix(1); // CR LF line ends
        }
        std::string line;
        line.reserve(raw.size());
        for (const char c : raw) {
            const auto u = static_cast<unsigned char>(c);
            line.push_back((u < 0x20 && c != '\t') || u == 0x7f ? '?' : c);
        }
        if (nl - start > k_max_line_bytes) {
            line += "…[cut]";
        }
        lines.push_back(std::move(line));
        if (lines.size() > k_max_lines) {
            lines.pop_front();
        }
        start = nl + 1;
    }
    return {std::make_move_iterator(lines.begin()), std::make_move_iterator(lines.end())};
}

namespace {

// "0000:10:00.0": a PCI function address as the kernel's dev_printk prints it (lowercase hex).
bool is_function_address(std::string_view s)
{
    static constexpr std::string_view k_shape = "hhhh:hh:hh.h";
    if (s.size() != k_shape.size()) {
        return false;
    }
    for (std::size_t k = 0; k < s.size(); ++k) {
        const bool ok = k_shape[k] == 'h' ? lex::is_xdigit_lower(s[k]) : s[k] == k_shape[k];
        if (!ok) {
            return false;
        }
    }
    return true;
}

} // namespace

std::vector<ReadyTimeout> ready_timeouts(const std::vector<std::string>& messages)
{
    static constexpr std::string_view k_not_ready = ": not ready ";
    static constexpr std::string_view k_after = "ms after ";
    static constexpr std::string_view k_giving_up = "; giving up";
    std::vector<ReadyTimeout> out;
    for (const auto& message : messages) {
        std::string_view m = message;
        while (!m.empty() && lex::is_space(m.back())) {
            m.remove_suffix(1);
        }
        const auto at = m.find(k_not_ready);
        if (at == std::string_view::npos || !m.ends_with(k_giving_up)) {
            continue;
        }
        // "<driver> <address>" before it: the address is its last word.
        std::string_view who = m.substr(0, at);
        const auto space = who.rfind(' ');
        const std::string_view address = space == std::string_view::npos ? who : who.substr(space + 1);
        std::string_view rest = m.substr(at + k_not_ready.size());
        if (!is_function_address(address) || lex::eat_span(rest, lex::is_digit) == 0 || !lex::eat(rest, k_after)) {
            continue;
        }
        rest.remove_suffix(k_giving_up.size());
        if (rest.empty()) {
            continue;
        }
        out.push_back({std::string(address), std::string(rest), std::string(m)});
    }
    return out;
}

std::vector<std::string> since_last_boot(std::vector<std::string> messages)
{
    for (std::size_t k = messages.size(); k > 0; --k) {
        if (messages[k - 1].starts_with(k_boot_banner)) {
            messages.erase(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(k - 1));
            break;
        }
    }
    return messages;
}

} // namespace passthru::format::kernel_log
