// SPDX-License-Identifier: GPL-2.0-or-later
#include "format/grammar.hpp"

#include <array>

#include "util/lex.hpp"
#include "util/strings.hpp"
#include "util/term.hpp"

namespace passthru::format {
namespace lex = util::lex;
namespace {

bool is_module_char(char c)
{
    return lex::is_alnum(c) || c == '_' || c == '-';
}

bool hex_run(std::string_view s, std::size_t pos, std::size_t n)
{
    return pos + n <= s.size() && lex::span(s, pos, lex::is_xdigit_lower) >= n;
}

bool module_name(std::string_view s)
{
    return s.size() <= 55 && lex::all_of(s, is_module_char);
}

bool pci_id(std::string_view s)
{
    return s.size() == 9 && hex_run(s, 0, 4) && s[4] == ':' && hex_run(s, 5, 4);
}

bool pci_address(std::string_view s)
{
    // "0000:41:00.0": the function is 0..7, the slot 00..1f (lspci -D, sysfs names).
    return s.size() == 12 && hex_run(s, 0, 4) && s[4] == ':' && hex_run(s, 5, 2) && s[7] == ':' && hex_run(s, 8, 2)
           && (s[8] == '0' || s[8] == '1') && s[10] == '.' && s[11] >= '0' && s[11] <= '7';
}

bool nic_name(std::string_view s)
{
    if (s.empty() || s.size() > 15 || s == "." || s == "..") {
        return false;
    }
    for (const char c : s) {
        if (c == '/' || c == ':' || lex::is_space(c) || c == '\0') {
            return false;
        }
    }
    return true;
}

bool vm_id(std::string_view s)
{
    if (s.empty() || s.size() > 9 || s[0] == '0' || !lex::all_of(s, lex::is_digit)) {
        return false;
    }
    return s.size() >= 3; // no leading zero, so 100 and up
}

bool storage_id(std::string_view s)
{
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (s.size() < 2 || !lex::is_lower(lower(s.front())) || !lex::is_alnum(s.back())) {
        return false;
    }
    for (const char c : s) {
        if (!lex::is_alnum(c) && c != '-' && c != '_' && c != '.') {
            return false;
        }
    }
    return true;
}

bool kernel_release(std::string_view s)
{
    // __NEW_UTS_LEN is 64; the release names a directory and a file name
    // (/lib/modules/<release>, vmlinuz-<release>).
    if (s.empty() || s.size() > 64 || s.front() == '.' || s.front() == '-') {
        return false;
    }
    return lex::all_of(s, [](char c) { return lex::is_alnum(c) || c == '.' || c == '_' || c == '+' || c == '~' || c == '-'; });
}

bool kernel_arg(std::string_view s)
{
    // One word of a line-based file (a boot entry's options line): printable
    // ASCII only, so no white space, line break or control character.
    return !s.empty() && s.size() <= 1024 && lex::all_of(s, [](char c) { return c > ' ' && c < 0x7f; });
}

bool line_text(std::string_view s)
{
    // An empty value is one line too (util::one_line: the rule every line-based
    // format passthru writes needs).
    return util::one_line(s);
}

struct Entry
{
    Grammar grammar;
    bool (*check)(std::string_view);
    std::string_view text;
};

constexpr std::array<Entry, 9> kGrammars{{
    {Grammar::module_name, module_name, "a module name: letters, digits, '_' and '-', at most 55 characters"},
    {Grammar::pci_id, pci_id, "a PCI vendor:device id: two groups of 4 lower-case hex digits (10de:1e07)"},
    {Grammar::pci_address, pci_address, "a PCI address: domain:bus:slot.function in lower-case hex (0000:41:00.0)"},
    {Grammar::nic_name, nic_name, "a network interface name: 1 to 15 characters, not '.' or '..', no '/', ':' or white space"},
    {Grammar::vm_id, vm_id, "a VM id: 100 to 999999999"},
    {Grammar::storage_id, storage_id, "a storage id: a letter, then letters, digits, '-', '_' or '.', ending in a letter or digit"},
    {Grammar::kernel_release, kernel_release,
     "a kernel release: 1 to 64 letters, digits, '.', '_', '+', '~' or '-', not starting with '.' or '-'"},
    {Grammar::kernel_arg, kernel_arg, "a kernel argument: 1 to 1024 printable ASCII characters without spaces"},
    {Grammar::line_text, line_text, "one line of text: no line break or other control character"},
}};

const Entry& entry(Grammar grammar)
{
    for (const auto& e : kGrammars) {
        if (e.grammar == grammar) {
            return e;
        }
    }
    return kGrammars[0];
}

} // namespace

bool matches(Grammar grammar, std::string_view value)
{
    return entry(grammar).check(value);
}

std::string_view describe(Grammar grammar)
{
    return entry(grammar).text;
}

std::optional<std::string> invalid_value(Grammar grammar, std::string_view value, std::string_view what)
{
    if (matches(grammar, value)) {
        return std::nullopt;
    }
    return std::string(what) + " '" + util::shown_value(value) + "' is not " + std::string(describe(grammar));
}

} // namespace passthru::format
