// SPDX-License-Identifier: GPL-2.0-or-later
// NIC name pinning (docs/facts.md: pve9): the .link files read from the PVE 9.1
// fixture, the names --pin-nics gives on the 9.2 fixture, and the renaming of
// an interfaces(5) file.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "plan/network/pinning.hpp"
#include "scan/scanner.hpp"

using namespace passthru;

namespace {

util::HostFs pinning_fixture_fs(const std::string& name)
{
    auto fs = util::HostFs::open(std::filesystem::path(PASSTHRU_FIXTURES_DIR) / "hosts" / name);
    REQUIRE(fs);
    return std::move(*fs);
}

scan::Inventory inventory_of(const util::HostFs& fs)
{
    std::vector<scan::Problem> problems;
    auto devices = scan::scan_pci_devices(fs, {}, problems);
    REQUIRE(devices);
    scan::Inventory inv;
    inv.devices = std::move(*devices);
    return inv;
}

} // namespace

TEST_CASE("the 9.1 installer's pins are read with their MACs")
{
    const auto fs = pinning_fixture_fs("pve91-epyc-4x2080ti-zfs");
    std::vector<std::string> warnings;
    const auto pins = plan::read_pinned_nics(fs, warnings);
    CHECK(warnings.empty());
    REQUIRE(pins.size() == 2);
    CHECK(pins[0].name == "nic0");
    CHECK(pins[0].mac == "70:85:c2:a1:3e:10");
    CHECK(pins[0].file == "/usr/local/lib/systemd/network/50-pmx-nic0.link");
    CHECK(pins[1].name == "nic1");
    // Every NIC there is pinned: --pin-nics has nothing to add, nothing is pending.
    const auto inv = inventory_of(fs);
    CHECK(plan::plan_pins(inv, pins).rename.empty());
    CHECK(plan::pending_pins(inv, pins).empty());
}

TEST_CASE("--pin-nics names the 9.2 host's NICs nic0, nic1 in PCI order, matched by MAC")
{
    const auto fs = pinning_fixture_fs("pve92-epyc-4x2080ti");
    const auto inv = inventory_of(fs);
    const auto change = plan::plan_pins(inv, {});
    CHECK(change.rename == std::map<std::string, std::string>{{"enp66s0f0", "nic0"}, {"enp66s0f1", "nic1"}});
    const std::string path = "/usr/local/lib/systemd/network/50-pmx-nic1.link";
    REQUIRE(change.files.count(path) == 1);
    CHECK(change.files.at(path) == "[Match]\nMACAddress=70:85:c2:a1:3e:11\nType=ether\n\n[Link]\nName=nic1\n");

    // A name pinned already is skipped, and its NIC keeps its pin.
    const std::vector<plan::PinnedNic> pins{{"nic0", "70:85:c2:a1:3e:10", "/x/50-pmx-nic0.link"}};
    const auto more = plan::plan_pins(inv, pins);
    CHECK(more.rename == std::map<std::string, std::string>{{"enp66s0f1", "nic1"}});
    CHECK(plan::pending_pins(inv, pins) == std::map<std::string, std::string>{{"nic0", "enp66s0f0"}});
}

TEST_CASE("renaming NICs in an interfaces file")
{
    const std::string text = "auto lo\niface lo inet loopback\n\nauto enp1s0\niface enp1s0 inet manual\n\n"
                             "iface enp1s0.10 inet manual\n\nauto vmbr0\niface vmbr0 inet static\n\taddress 10.0.0.2/24\n"
                             "\tbridge-ports enp1s0 enp2s0\n\tbridge-stp off\n\n# enp1s0 in a comment stays\n";
    const auto out = plan::rename_nics(text, {{"enp1s0", "nic0"}, {"enp2s0", "nic1"}});
    CHECK(out
          == "auto lo\niface lo inet loopback\n\nauto nic0\niface nic0 inet manual\n\n"
             "iface nic0.10 inet manual\n\nauto vmbr0\niface vmbr0 inet static\n\taddress 10.0.0.2/24\n"
             "\tbridge-ports nic0 nic1\n\tbridge-stp off\n\n# enp1s0 in a comment stays\n");
    CHECK(plan::rename_nics(text, {}) == text);
}

TEST_CASE("a malformed .link file is skipped with a warning")
{
    std::filesystem::path dir = std::filesystem::temp_directory_path() / ("passthru-pin-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir / "usr/local/lib/systemd/network");
    {
        std::ofstream(dir / "usr/local/lib/systemd/network/50-pmx-nic0.link") << "[Match]\nMACAddress=zz\n[Link]\nName=nic0\n";
        std::ofstream(dir / "usr/local/lib/systemd/network/60-other.link") << "garbage\n";
    }
    auto fs = util::HostFs::open(dir);
    REQUIRE(fs);
    std::vector<std::string> warnings;
    CHECK(plan::read_pinned_nics(*fs, warnings).empty());
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("50-pmx-nic0.link: no [Match] MACAddress=") != std::string::npos);
    std::filesystem::remove_all(dir);
}
