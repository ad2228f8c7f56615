// SPDX-License-Identifier: GPL-2.0-or-later
// format/kernel_log: the kernel's reset give-ups and the cut at the last boot, on the
// lines of tests/fixtures/kernel-log (the kernel's own messages).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "format/kernel_log.hpp"

using namespace passthru;
namespace klog = passthru::format::kernel_log;

namespace {

std::string kernel_log_fixture(const std::string& name)
{
    std::ifstream in(std::string(PASSTHRU_FIXTURES_DIR) + "/kernel-log/" + name);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

TEST_SUITE("format::kernel_log")
{
    TEST_CASE("give-ups after FLR and bus reset are read; waiting and ready lines are not")
    {
        const auto messages = klog::kernel_messages(kernel_log_fixture("reset-timeouts.kern.log"), "fixture");
        REQUIRE(messages);
        const auto all = klog::ready_timeouts(*messages);
        REQUIRE(all.size() == 3);
        CHECK(all[0].function == "0000:01:00.1");
        CHECK(all[1].function == "0000:01:00.0");
        CHECK(all[1].event == "FLR");
        CHECK(all[1].message == "vfio-pci 0000:01:00.0: not ready 65535ms after FLR; giving up");
        CHECK(all[2].function == "0000:41:00.0");
        CHECK(all[2].event == "bus reset");
    }

    TEST_CASE("since the last boot: the give-up of the boot before does not count")
    {
        const auto messages = klog::kernel_messages(kernel_log_fixture("reset-timeouts.kern.log"), "fixture");
        REQUIRE(messages);
        const auto since = klog::since_last_boot(*messages);
        CHECK(since.size() == messages->size() - 2);
        CHECK(since.front().starts_with(klog::k_boot_banner));
        const auto timeouts = klog::ready_timeouts(since);
        REQUIRE(timeouts.size() == 2);
        CHECK(timeouts[0].function == "0000:01:00.0");
        // a log without a banner (the ring buffer's start was overwritten) is all of this boot
        const std::vector<std::string> no_banner{"a", "b"};
        CHECK(klog::since_last_boot(no_banner) == no_banner);
    }

    TEST_CASE("near misses are not give-ups")
    {
        const std::vector<std::string> lines{
            "vfio-pci 0000:01:00.0: not ready 65535ms after FLR; waiting",    "vfio-pci 0000:01:00.0: ready 1023ms after FLR",
            "vfio-pci 0000:1:00.0: not ready 65535ms after FLR; giving up",   // not an address
            "vfio-pci 0000:01:00.0: not ready msms after FLR; giving up",     // no number
            "vfio-pci 0000:01:00.0: not ready 65535ms after ; giving up",     // no event
            "vfio-pci 0000:01:00.0: not ready 65535ms after FLR; giving up!", // not the end
            "0000:01:00.0: not ready 65535ms after FLR; giving up  ",         // no driver, trailing blanks: still one
        };
        const auto timeouts = klog::ready_timeouts(lines);
        REQUIRE(timeouts.size() == 1);
        CHECK(timeouts[0].message == "0000:01:00.0: not ready 65535ms after FLR; giving up");
    }
}
