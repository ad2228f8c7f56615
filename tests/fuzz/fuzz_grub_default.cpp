// SPDX-License-Identifier: GPL-2.0-or-later
// /etc/default/grub and its grub.d drop-ins: finding the kernel-argument
// assignments never fails, every assignment is on a line of the file, and
// the lines join back to the text byte for byte.
#include "format/grub_default.hpp"
#include "fuzz.hpp"

using namespace passthru;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto text = fuzz::text_of(data, size);
    const auto file = format::parse_grub_file("/etc/default/grub", std::string(text));
    fuzz::require(file.join() == text, "parse_grub_file(text).join() == text");
    for (const auto& a : file.assignments) {
        fuzz::require(a.line < file.lines.size(), "an assignment is on a line of the file");
        if (a.parsed && a.quote != 0) {
            fuzz::require(file.lines[a.line] == a.prefix + a.quote + a.value + a.quote + a.suffix, "a quoted assignment rebuilds its line");
        }
    }
    return 0;
}
