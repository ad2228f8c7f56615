// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/kernel_log.hpp"

#include "format/kernel_log.hpp"

namespace passthru::scan {

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
        auto messages = format::kernel_log::kernel_messages(*text, "/dev/kmsg");
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
    auto messages = format::kernel_log::kernel_messages(*text, out.source);
    if (!messages) {
        out.note = messages.error().what();
        return out;
    }
    out.messages = std::move(*messages);
    return out;
}

} // namespace passthru::scan
