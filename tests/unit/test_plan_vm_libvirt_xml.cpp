// SPDX-License-Identifier: GPL-2.0-or-later
// plan/vm/libvirt_xml: the domain's <cpu> and <memory> as the address-space
// check reads them, and <maxphysaddr mode='passthrough'/> where libvirt allows it.
#include <doctest/doctest.h>

#include "plan/vm/libvirt_xml.hpp"

using namespace passthru;

namespace {

std::string domain(const std::string& inner)
{
    return "<domain type='kvm'>\n  <name>d</name>\n  <memory unit='KiB'>16777216</memory>\n  <os>\n"
           "    <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>\n  </os>\n"
           + inner + "  <devices>\n  </devices>\n</domain>\n";
}

} // namespace

TEST_SUITE("plan::vm::libvirt_xml")
{
    TEST_CASE("read_domain_cpu: no <cpu>, a custom model with maxphysaddr emulate, memory units")
    {
        auto none = plan::read_domain_cpu(domain(""));
        REQUIRE(none);
        CHECK_FALSE(none->present);
        CHECK(none->memory_mib == 16384);
        auto custom =
            plan::read_domain_cpu(domain("  <cpu mode='custom' match='exact'>\n    <model fallback='forbid'>Skylake-Server</model>\n"
                                         "    <maxphysaddr mode='emulate' bits='42'/>\n  </cpu>\n"));
        REQUIRE(custom);
        CHECK(custom->present);
        CHECK(custom->mode == "custom");
        CHECK(custom->model == "Skylake-Server");
        CHECK(custom->maxphysaddr == "emulate");
        CHECK(custom->maxphysaddr_bits == 42);
        auto gib = plan::read_domain_cpu("<domain type='kvm'><name>d</name><memory unit='GiB'>64</memory></domain>");
        REQUIRE(gib);
        CHECK(gib->memory_mib == 65536);
        CHECK_FALSE(plan::read_domain_cpu("<domain"));
    }

    TEST_CASE("pass_host_phys_bits: adds host-passthrough to a domain without <cpu>, fixes a host-passthrough one, refuses other modes")
    {
        auto added = plan::pass_host_phys_bits(domain(""));
        REQUIRE(added);
        CHECK(added->find("  </os>\n  <cpu mode='host-passthrough' check='none' migratable='on'>\n    <maxphysaddr mode='passthrough'/>\n"
                          "  </cpu>\n")
              != std::string::npos);
        auto read = plan::read_domain_cpu(*added);
        REQUIRE(read);
        CHECK(read->mode == "host-passthrough");
        CHECK(read->maxphysaddr == "passthrough");

        auto fixed = plan::pass_host_phys_bits(domain("  <cpu mode='host-passthrough' check='none'>\n    <topology sockets='1' cores='4' "
                                                      "threads='1'/>\n    <maxphysaddr mode='emulate' bits='40'/>\n  </cpu>\n"));
        REQUIRE(fixed);
        CHECK(fixed->find("<maxphysaddr mode='emulate'") == std::string::npos);
        CHECK(fixed->find("    <topology sockets='1' cores='4' threads='1'/>\n    <maxphysaddr mode='passthrough'/>\n  </cpu>")
              != std::string::npos);

        auto other = plan::pass_host_phys_bits(domain("  <cpu mode='host-model'/>\n"));
        REQUIRE_FALSE(other);
        CHECK(other.error().code() == Errc::precondition);
    }
}
