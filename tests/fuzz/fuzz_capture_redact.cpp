// SPDX-License-Identifier: GPL-2.0-or-later
// The capture redactor (capture/redact): any text in any file capture packs
// gives an answer, never a crash; a secret, an address, a MAC and a foreign
// node name planted on lines of their own after the text never survive.
// The first byte picks the file the text is in.
#include <array>
#include <string>

#include "capture/redact.hpp"
#include "fuzz.hpp"

using namespace passthru;

namespace {

constexpr std::array<std::string_view, 10> k_paths{"/etc/pve/qemu-server/101.conf",
                                                   "/etc/pve/storage.cfg",
                                                   "/etc/pve/mapping/pci.cfg",
                                                   "/var/log/pve/tasks/index",
                                                   "/proc/4242/net/route",
                                                   "/etc/network/interfaces",
                                                   "/etc/default/grub",
                                                   "/proc/cmdline",
                                                   "/etc/hosts",
                                                   "/sys/class/net/eth0/uevent"};

// Each planted value, and the lines that carry it.
constexpr std::array<std::string_view, 6> k_planted{"Fz9PlantedPw",        "Fz9PlantedTk",      "10.250.77.66",
                                                    "2a01:4f8:fe:77::1:2", "de:ad:be:ef:77:66", "fz9-foreign-node"};
constexpr std::string_view k_lines = "\ndb_password=Fz9PlantedPw\napi_token: Fz9PlantedTk\n"
                                     "server 10.250.77.66 via 2a01:4f8:fe:77::1:2 hwaddress de:ad:be:ef:77:66 node=fz9-foreign-node\n";

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0) {
        return 0;
    }
    const std::string_view path = k_paths.at(data[0] % k_paths.size());
    const auto text = fuzz::text_of(data + 1, size - 1);
    for (const auto value : k_planted) {
        if (text.find(value) != std::string_view::npos) {
            return 0; // the input spells a planted value itself
        }
    }
    capture::Redactor redactor(capture::RedactOptions{});
    redactor.learn("/etc/hostname", "pve\n");
    redactor.learn("/etc/pve/corosync.conf", "nodelist {\n  node {\n    name: fz9-foreign-node\n  }\n}\n");
    redactor.learn(path, text);
    const std::string out = redactor.content(path, std::string(text) + std::string(k_lines));
    for (const auto value : k_planted) {
        fuzz::require(out.find(value) == std::string::npos, "a planted secret, address or node name survives");
    }
    (void)redactor.path(path);
    return 0;
}
