// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/strings.hpp"

#include <algorithm>
#include <charconv>

namespace passthru::util {

std::string_view trim(std::string_view s)
{
    const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    while (!s.empty() && is_space(s.front())) {
        s.remove_prefix(1);
    }
    while (!s.empty() && is_space(s.back())) {
        s.remove_suffix(1);
    }
    return s;
}

std::vector<std::string> split(std::string_view s, std::string_view separators)
{
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= s.size()) {
        const auto pos = s.find_first_of(separators, start);
        const auto end = pos == std::string_view::npos ? s.size() : pos;
        if (end > start) {
            out.emplace_back(s.substr(start, end - start));
        }
        if (pos == std::string_view::npos) {
            break;
        }
        start = pos + 1;
    }
    return out;
}

std::vector<std::string_view> split_exact(std::string_view s, char separator)
{
    std::vector<std::string_view> out;
    while (true) {
        const auto pos = s.find(separator);
        out.push_back(s.substr(0, pos));
        if (pos == std::string_view::npos) {
            return out;
        }
        s.remove_prefix(pos + 1);
    }
}

std::vector<std::string> split_lines(std::string_view s)
{
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < s.size()) {
        const auto pos = s.find('\n', start);
        if (pos == std::string_view::npos) {
            out.emplace_back(s.substr(start));
            break;
        }
        out.emplace_back(s.substr(start, pos - start));
        start = pos + 1;
    }
    return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator)
{
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i != 0) {
            out += separator;
        }
        out += parts[i];
    }
    return out;
}

std::string to_lower(std::string_view s)
{
    std::string out(s);
    for (auto& c : out) {
        if (c >= 'A' && c <= 'Z') {
            c = static_cast<char>(c - 'A' + 'a');
        }
    }
    return out;
}

std::optional<std::uint64_t> parse_hex(std::string_view s)
{
    s = trim(s);
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s.remove_prefix(2);
    }
    if (s.empty()) {
        return std::nullopt;
    }
    std::uint64_t value = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value, 16);
    if (ec != std::errc() || ptr != s.data() + s.size()) {
        return std::nullopt;
    }
    return value;
}

std::optional<long long> parse_int(std::string_view s)
{
    s = trim(s);
    if (s.empty()) {
        return std::nullopt;
    }
    long long value = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value, 10);
    if (ec != std::errc() || ptr != s.data() + s.size()) {
        return std::nullopt;
    }
    return value;
}

bool one_line(std::string_view s)
{
    return std::all_of(s.begin(), s.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u >= 0x20 && u != 0x7f;
    });
}

std::string hex(std::uint64_t value, int width)
{
    static constexpr char k_digits[] = "0123456789abcdef";
    std::string out;
    do {
        out.insert(out.begin(), k_digits[value & 0xf]);
        value >>= 4;
    } while (value != 0);
    while (static_cast<int>(out.size()) < width) {
        out.insert(out.begin(), '0');
    }
    return out;
}

std::optional<std::pair<int, int>> major_minor(std::string_view version)
{
    auto number = [&](std::size_t& pos) -> std::optional<int> {
        const std::size_t start = pos;
        long value = 0;
        while (pos < version.size() && pos - start < 6 && version[pos] >= '0' && version[pos] <= '9') {
            value = value * 10 + (version[pos] - '0');
            ++pos;
        }
        return pos == start ? std::nullopt : std::optional<int>(static_cast<int>(value));
    };
    std::size_t pos = 0;
    const auto major = number(pos);
    if (!major || pos >= version.size() || version[pos] != '.') {
        return std::nullopt;
    }
    ++pos;
    const auto minor = number(pos);
    if (!minor) {
        return std::nullopt;
    }
    return std::pair<int, int>{*major, *minor};
}

std::vector<unsigned long> version_numbers(std::string_view version)
{
    std::vector<unsigned long> out;
    std::string run;
    auto end_run = [&] {
        if (!run.empty()) {
            out.push_back(std::stoul(run)); // at most 9 digits: cannot overflow
            run.clear();
        }
    };
    for (const char c : version) {
        if (c >= '0' && c <= '9') {
            run += c;
            if (run.size() >= 10) {
                return {};
            }
        } else if (c == '.' || c == '-' || c == '+' || c == '~') {
            end_run();
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            break; // a letter ends the comparable part ("9.0.25~bpo1", "8.1.4pve1")
        } else {
            return {};
        }
    }
    end_run();
    return out;
}

bool version_at_least(std::string_view version, std::string_view minimum)
{
    const auto have = version_numbers(version);
    const auto want = version_numbers(minimum);
    if (have.empty()) {
        return false;
    }
    return !std::lexicographical_compare(have.begin(), have.end(), want.begin(), want.end());
}

std::string module_key(std::string_view name)
{
    std::string out(name);
    std::replace(out.begin(), out.end(), '-', '_');
    return out;
}

} // namespace passthru::util
