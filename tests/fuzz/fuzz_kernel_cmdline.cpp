// SPDX-License-Identifier: GPL-2.0-or-later
// A kernel command line (/proc/cmdline, /etc/kernel/cmdline, GRUB's values):
// splitting never fails; the tokens, printed and split again, are the same;
// a set token is found afterwards and a removed key is gone.
#include "format/kernel_cmdline.hpp"
#include "fuzz.hpp"

using namespace passthru;
using format::KernelCmdline;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    KernelCmdline cmdline(fuzz::text_of(data, size));
    const KernelCmdline again(cmdline.str());
    fuzz::require(again.tokens() == cmdline.tokens(), "KernelCmdline(c.str()).tokens() == c.tokens()");
    for (const auto& token : cmdline.tokens()) {
        (void)KernelCmdline::key_of(token);
        (void)cmdline.value(KernelCmdline::key_of(token));
    }
    cmdline.set("iommu=pt");
    fuzz::require(cmdline.has_token("iommu=pt"), "a set token is there");
    cmdline.remove_key("iommu");
    fuzz::require(!cmdline.has_key("iommu"), "a removed key is gone");
    return 0;
}
