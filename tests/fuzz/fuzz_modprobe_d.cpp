// SPDX-License-Identifier: GPL-2.0-or-later
// modprobe.d text (any file in /etc/modprobe.d, written by anyone): finding
// the lines of a module never fails, and removing the lines it found leaves
// text in which they are not found again.
#include "format/modprobe_d.hpp"
#include "fuzz.hpp"

using namespace passthru;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto text = fuzz::text_of(data, size);
    for (const char* command : {"options", "softdep", "blacklist", "install"}) {
        for (const char* module : {"vfio_pci", "nouveau", "nvidia"}) {
            const auto found = format::find_modprobe_lines(text, command, module);
            std::vector<format::ModprobeEdit> edits;
            for (const auto& line : found) {
                fuzz::require(line.first <= line.last, "a logical line spans first..last");
                edits.push_back({line.first, line.last, std::nullopt});
            }
            const auto left = format::edit_modprobe_lines(text, edits);
            if (left) {
                fuzz::require(format::find_modprobe_lines(*left, command, module).empty(), "removed lines are not found again");
            }
        }
    }
    return 0;
}
