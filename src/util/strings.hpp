// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace passthru::util {

std::string_view trim(std::string_view s);
// Splits on any of the separator characters, dropping empty pieces.
std::vector<std::string> split(std::string_view s, std::string_view separators);
// Splits on every `separator`, keeping empty pieces ("a;;b" -> "a", "", "b"; "" -> "").
std::vector<std::string_view> split_exact(std::string_view s, char separator);
// Splits into lines; a trailing newline does not produce an empty last line.
std::vector<std::string> split_lines(std::string_view s);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
std::string to_lower(std::string_view s);
// Parses "0x10de", "10de" (hex) into a number; nullopt on garbage or overflow.
std::optional<std::uint64_t> parse_hex(std::string_view s);
// Parses a decimal integer (optionally negative); nullopt on garbage.
std::optional<long long> parse_int(std::string_view s);

// The one version parser: the leading "MAJOR.MINOR" of a kernel release
// ("6.8.12-4-pve" -> {6, 8}), a Proxmox VE or package version ("8.3.0").
// nullopt when the text does not start with digits, a dot and digits.
std::optional<std::pair<int, int>> major_minor(std::string_view version);
// The same parser for a whole package version: its numbers in order
// ("6.1-13" -> 6 1 13; a letter ends the comparable part: "8.1.4pve1" -> 8 1 4);
// empty when another character comes first or a number has 10 digits or more.
std::vector<unsigned long> version_numbers(std::string_view version);
// MINIMUM <= VERSION by those numbers (qemu-server's "9.0.25" >= "6.1-13");
// false for a version without numbers.
bool version_at_least(std::string_view version, std::string_view minimum);

// The one module-name folding rule: kmod treats '-' and '_' in module names
// alike, so names compare after folding '-' to '_' ("vfio-pci" -> "vfio_pci").
std::string module_key(std::string_view name);
// Formats a number as lower-case hex with at least `width` digits.
std::string hex(std::uint64_t value, int width);
// One line of text: no line break and no other control character (bytes from
// 0x80, UTF-8, stay). Every line-based file passthru writes ends a line at '\n',
// so a value from data or the host that goes into one must pass this.
bool one_line(std::string_view s);

} // namespace passthru::util
