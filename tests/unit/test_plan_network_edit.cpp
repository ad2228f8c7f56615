// SPDX-License-Identifier: GPL-2.0-or-later
// The interfaces(5) parser (lossless round trip) and the bond/bridge editor.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "format/interfaces.hpp"
#include "plan/network/edit.hpp"

using namespace passthru;
using format::InterfacesFile;

namespace {

std::string edit_fixture(const std::string& name)
{
    std::ifstream in(std::filesystem::path(PASSTHRU_FIXTURES_DIR) / "network" / name, std::ios::binary);
    REQUIRE(in.good());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

plan::BondBridgeSpec seed_spec()
{
    plan::BondBridgeSpec spec;
    spec.slaves = {"enp66s0f0", "enp66s0f1"};
    spec.mode = "balance-alb";
    spec.xmit_hash_policy = "layer2+3";
    spec.address = "192.168.1.252/24";
    spec.gateway = "192.168.1.1";
    return spec;
}

plan::NetworkEdit edit(const std::string& text, const plan::BondBridgeSpec& spec)
{
    return plan::edit_bond_bridge(InterfacesFile::parse(text), spec);
}

bool has_line(const std::string& text, const std::string& line)
{
    return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

} // namespace

TEST_SUITE("format::InterfacesFile")
{
    TEST_CASE("parse then write is byte-identical for real PVE files")
    {
        for (const char* name : {"pve-fresh.interfaces", "pve-vlans.interfaces", "pve-comments.interfaces", "pve-source.interfaces",
                                 "crlf-dhcp.interfaces", "seed-bond.expected"}) {
            CAPTURE(name);
            const std::string text = edit_fixture(name);
            CHECK(InterfacesFile::parse(text).text() == text);
        }
    }

    TEST_CASE("round trip of edge cases")
    {
        for (const std::string& text :
             {std::string(), std::string("\n"), std::string("# only a comment"), std::string("auto lo\niface lo inet loopback"),
              std::string("iface a inet manual\n\tup x \\"), std::string("  \t \n\n\t# x\n"), std::string("garbage outside\n")}) {
            CAPTURE(text);
            CHECK(InterfacesFile::parse(text).text() == text);
        }
    }

    TEST_CASE("stanzas, options, comments and continuation lines")
    {
        const auto file = InterfacesFile::parse(edit_fixture("pve-comments.interfaces"));
        const auto vmbr0 = file.find("vmbr0", "inet");
        REQUIRE(vmbr0);
        CHECK(vmbr0->method == "static");
        CHECK(file.option(*vmbr0, "address") == "192.168.1.252/24");
        CHECK(file.option(*vmbr0, "bridge-ports") == "enp66s0f0");
        // The post-up line continues onto the next physical line.
        CHECK(file.option(*vmbr0, "post-up") == "echo 1 > /proc/sys/net/ipv4/ip_forward || true");
        // A comment inside a stanza does not end it.
        const auto nic = file.find("enp66s0f0", "inet");
        REQUIRE(nic);
        CHECK(file.option(*nic, "mtu") == "1500");
        CHECK(file.option_indent() == "    ");
        CHECK_FALSE(file.is_auto("enp66s0f0")); // allow-hotplug is not auto
        CHECK(file.is_auto("vmbr0"));
        CHECK(file.stray_lines().empty());
    }

    TEST_CASE("source, source-directory and mapping are kept as keywords")
    {
        const auto file = InterfacesFile::parse(edit_fixture("pve-source.interfaces"));
        CHECK(file.sources()
              == std::vector<std::string>{"/etc/network/interfaces.d", "/etc/network/interfaces.d/*.cfg", "/etc/network/interfaces.d/*"});
        CHECK(file.stray_lines().empty());
        // mapping options are not options of the stanza before it.
        const auto lo = file.find("lo", "inet");
        REQUIRE(lo);
        CHECK(lo->options.empty());
    }

    TEST_CASE("text outside any stanza is reported as stray")
    {
        const auto file = InterfacesFile::parse("address 1.2.3.4/24\nauto lo\n");
        REQUIRE(file.stray_lines().size() == 1);
        CHECK(file.lines()[file.stray_lines()[0]].line_number == 1);
    }

    TEST_CASE("set_option keeps indentation and removes duplicates")
    {
        auto file = InterfacesFile::parse("iface a inet static\n  address 1.2.3.4/24\n  mtu 1500\n  mtu 9000\n");
        CHECK_FALSE(file.set_option("a", "inet", "address", "1.2.3.4/24"));
        CHECK(file.set_option("a", "inet", "mtu", "9000"));
        CHECK(file.text() == "iface a inet static\n  address 1.2.3.4/24\n  mtu 9000\n");
        CHECK(file.set_option("a", "inet", "gateway", "1.2.3.1"));
        CHECK(file.text() == "iface a inet static\n  address 1.2.3.4/24\n  mtu 9000\n  gateway 1.2.3.1\n");
    }
}

TEST_SUITE("plan::edit_bond_bridge")
{
    TEST_CASE("the seed's bond under vmbr0 from a fresh PVE file matches the hand-written golden file")
    {
        const auto out = edit(edit_fixture("pve-fresh.interfaces"), seed_spec());
        CHECK(out.refusals.empty());
        CHECK(out.changed);
        CHECK(out.text == edit_fixture("seed-bond.expected"));
        // The seed puts layer2+3 on balance-alb; PVE writes it only for balance-xor/802.3ad.
        REQUIRE(out.warnings.size() == 1);
        CHECK(out.warnings[0].find("ignored") != std::string::npos);
        CHECK(out.text.find("bond-xmit-hash-policy") == std::string::npos);
        CHECK(out.text.find("bond-ports") == std::string::npos);
        CHECK_FALSE(out.reasons.empty());
    }

    TEST_CASE("applying the same request to the result changes nothing")
    {
        const auto out = edit(edit_fixture("seed-bond.expected"), seed_spec());
        CHECK(out.refusals.empty());
        CHECK_FALSE(out.changed);
        CHECK(out.text == edit_fixture("seed-bond.expected"));
    }

    TEST_CASE("the seed's own file is corrected: bond inet static without address, vmbr0 inet dhcp with an address")
    {
        const std::string seed = "auto lo\niface lo inet loopback\n\niface enp66s0f0 inet manual\niface enp66s0f1 inet manual\n\n"
                                 "auto bond0\niface bond0 inet static\n        bond-slaves enp66s0f0 enp66s0f1\n"
                                 "        bond-miimon 100\n        bond-mode balance-alb\n        bond-xmit-hash-policy layer2+3\n\n"
                                 "auto vmbr0\niface vmbr0 inet dhcp\n        address 192.168.1.252/24\n        gateway 192.168.1.1\n"
                                 "        bridge-ports bond0\n        bridge-stp off\n        bridge-fd 0\n        \n"
                                 "# The IP address is given to the bridge, not the bond\n";
        const auto out = edit(seed, seed_spec());
        REQUIRE(out.refusals.empty());
        CHECK(has_line(out.text, "iface bond0 inet manual"));
        CHECK(has_line(out.text, "iface vmbr0 inet static"));
        CHECK(out.text.find("xmit-hash") == std::string::npos);
        CHECK(has_line(out.text, "        address 192.168.1.252/24"));
        CHECK(out.text.find("# The IP address is given to the bridge, not the bond\n") != std::string::npos);
    }

    TEST_CASE("802.3ad keeps the xmit hash policy; vlan-aware adds yes and 2-4094")
    {
        auto spec = seed_spec();
        spec.mode = "802.3ad";
        spec.vlan_aware = true;
        const auto out = edit(edit_fixture("pve-fresh.interfaces"), spec);
        REQUIRE(out.refusals.empty());
        CHECK(out.warnings.empty());
        CHECK(has_line(out.text, "\tbond-mode 802.3ad"));
        CHECK(has_line(out.text, "\tbond-xmit-hash-policy layer2+3"));
        CHECK(has_line(out.text, "\tbridge-vlan-aware yes"));
        CHECK(has_line(out.text, "\tbridge-vids 2-4094"));
    }

    TEST_CASE("bridge-vlan-aware no is removed, never written")
    {
        std::string text = edit_fixture("pve-fresh.interfaces");
        text.replace(text.find("\tbridge-fd 0\n"), 13, "\tbridge-fd 0\n\tbridge-vlan-aware no\n");
        const auto out = edit(text, seed_spec());
        REQUIRE(out.refusals.empty());
        CHECK(out.text.find("bridge-vlan-aware") == std::string::npos);
    }

    TEST_CASE("an existing VLAN-aware bridge with IPv6 and a VLAN interface: only the port changes")
    {
        auto spec = seed_spec();
        spec.slaves = {"eno1", "eno2"};
        spec.mode = "active-backup";
        spec.xmit_hash_policy.reset();
        spec.address.reset();
        spec.gateway.reset();
        const std::string before = edit_fixture("pve-vlans.interfaces");
        const auto out = edit(before, spec);
        REQUIRE(out.refusals.empty());
        CHECK(has_line(out.text, "\tbridge-ports bond0"));
        CHECK(has_line(out.text, "\tbridge-vlan-aware yes"));
        CHECK(has_line(out.text, "iface vmbr0 inet6 static"));
        CHECK(has_line(out.text, "\taddress fd00:10::5/64"));
        CHECK(has_line(out.text, "auto vmbr0.20"));
        CHECK(out.text.find("# network interface settings; autogenerated\n") == 0);
        // The bond stanza comes right before vmbr0's block.
        CHECK(out.text.find("auto bond0\niface bond0 inet manual\n") < out.text.find("auto vmbr0\n"));
    }

    TEST_CASE("the address of a port moves to the new bridge")
    {
        auto spec = seed_spec();
        spec.address.reset();
        spec.gateway.reset();
        spec.mode = "balance-rr";
        spec.xmit_hash_policy.reset();
        const auto out = edit(edit_fixture("pve-source.interfaces"), spec);
        REQUIRE(out.refusals.empty());
        CHECK(has_line(out.text, "iface enp66s0f0 inet manual"));
        CHECK(has_line(out.text, "iface vmbr0 inet static"));
        CHECK(has_line(out.text, "\taddress 192.168.1.252/24"));
        CHECK(has_line(out.text, "\tdns-nameservers 192.168.1.1"));
        // The port keeps no address line, the bridge block sits before the trailing source line.
        CHECK(out.text.find("\taddress") == out.text.rfind("\taddress"));
        CHECK(out.text.find("iface vmbr0") < out.text.rfind("source /etc/network/interfaces.d/*"));
        // The file had no final newline; the untouched last line keeps that.
        CHECK(out.text.back() == '*');
        CHECK(has_line(out.text, "mapping eth*"));
    }

    TEST_CASE("--address replaces a port's address with a warning")
    {
        auto spec = seed_spec();
        spec.address = "192.168.1.10/24";
        spec.gateway.reset();
        const auto out = edit(edit_fixture("pve-source.interfaces"), spec);
        REQUIRE(out.refusals.empty());
        CHECK(has_line(out.text, "\taddress 192.168.1.10/24"));
        CHECK(has_line(out.text, "\tgateway 192.168.1.1")); // the port's gateway is inside the new subnet
        bool warned = false;
        for (const auto& w : out.warnings) {
            warned = warned || w.find("192.168.1.252/24 is removed") != std::string::npos;
        }
        CHECK(warned);
    }

    TEST_CASE("conflicts are refused and the text is unchanged")
    {
        const std::string vlans = edit_fixture("pve-vlans.interfaces");
        auto spec = seed_spec();
        spec.address.reset();
        spec.gateway.reset();

        SUBCASE("a NIC that is a port of another bridge")
        {
            spec.slaves = {"eno1", "eno2"};
            spec.bridge = "vmbr1";
            const auto out = edit(vlans, spec);
            REQUIRE_FALSE(out.refusals.empty());
            CHECK(out.refusals[0].message.find("eno1 is a port of bridge vmbr0") != std::string::npos);
            CHECK(out.text == vlans);
            CHECK_FALSE(out.changed);
        }
        SUBCASE("a VLAN interface on a future bond member")
        {
            const auto out = edit(vlans + "\nauto eno2.30\niface eno2.30 inet manual\n", [&] {
                auto s = spec;
                s.slaves = {"eno2", "enp66s0f0"};
                s.bridge = "vmbr1";
                return s;
            }());
            REQUIRE_FALSE(out.refusals.empty());
            CHECK(out.refusals[0].message.find("VLAN interface eno2.30") != std::string::npos);
        }
        SUBCASE("two ports with addresses and no --address")
        {
            const std::string text = "iface a inet static\n\taddress 10.0.0.2/24\n\niface b inet dhcp\n";
            auto s = spec;
            s.slaves = {"a", "b"};
            const auto out = edit(text, s);
            REQUIRE_FALSE(out.refusals.empty());
            CHECK(out.refusals[0].message.find("each carry an inet configuration") != std::string::npos);
        }
        SUBCASE("--gateway without any address on the bridge")
        {
            auto s = spec;
            s.gateway = "10.1.1.1";
            s.slaves = {"enp66s0f0", "enp66s0f1"};
            s.bridge = "vmbr1";
            const auto out = edit(vlans, s);
            REQUIRE_FALSE(out.refusals.empty());
        }
    }

    TEST_CASE("CRLF files are edited with CRLF")
    {
        auto spec = seed_spec();
        spec.slaves = {"eno1", "eno2"};
        spec.address.reset();
        spec.gateway.reset();
        const auto out = edit(edit_fixture("crlf-dhcp.interfaces"), spec);
        REQUIRE(out.refusals.empty());
        CHECK(out.text.find("auto bond0\r\niface bond0 inet manual\r\n") != std::string::npos);
        CHECK(out.text.find("iface eno2 inet manual\r\n") != std::string::npos);
        CHECK(out.text.find("\tbridge-ports bond0\r\n") != std::string::npos);
        CHECK(out.text.find("iface vmbr0 inet dhcp\r\n") != std::string::npos);
        // No bare LF anywhere.
        for (std::size_t i = 0; i < out.text.size(); ++i) {
            if (out.text[i] == '\n') {
                REQUIRE(i > 0);
                CHECK(out.text[i - 1] == '\r');
            }
        }
    }
}
