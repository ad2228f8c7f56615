// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include "plan/plan_json.hpp"
#include "plan/request.hpp"

using namespace passthru;

namespace {

plan::Request good_request()
{
    plan::Request r;
    r.vm = "101";
    r.vmid = 101;
    r.gpus = "all";
    r.network = plan::NetworkRequest{};
    r.network->bond_slaves = {"enp66s0f0", "enp66s0f1"};
    r.network->bond_mode = "802.3ad";
    return r;
}

std::string rejected(const plan::Request& r)
{
    auto v = plan::validate_request(r);
    if (v) {
        return "";
    }
    CHECK(v.error().code() == Errc::usage);
    return v.error().what();
}

} // namespace

TEST_SUITE("plan::request")
{
    TEST_CASE("interface names follow the kernel's rules")
    {
        CHECK(plan::valid_ifname("enp66s0f0"));
        CHECK(plan::valid_ifname("nic0"));
        CHECK(plan::valid_ifname("123456789012345"));
        CHECK_FALSE(plan::valid_ifname("1234567890123456"));
        CHECK_FALSE(plan::valid_ifname(""));
        CHECK_FALSE(plan::valid_ifname(".."));
        CHECK_FALSE(plan::valid_ifname("eth0:1"));
        CHECK_FALSE(plan::valid_ifname("a b"));
        CHECK_FALSE(plan::valid_ifname("a/b"));
    }

    TEST_CASE("a request passes or is refused with the option it concerns")
    {
        CHECK(rejected(good_request()).empty());

        auto r = good_request();
        r.vm = "abc";
        r.vmid.reset();
        CHECK(rejected(r).find("--vm must be a numeric VMID") != std::string::npos);

        r = good_request();
        r.vmid = 102; // does not match --vm
        CHECK(rejected(r).find("--vm") != std::string::npos);

        r = good_request();
        r.backend = plan::Backend::libvirt;
        r.vm = "gpu-vm";
        r.vmid.reset();
        CHECK(rejected(r).empty());

        r = good_request();
        r.network->bond_mode = "fastest";
        CHECK(rejected(r).find("--bond-mode 'fastest' is not one of") != std::string::npos);

        r = good_request();
        r.network->bond_slaves = {"enp66s0f0", "bad name"};
        CHECK(rejected(r).find("--bond: 'bad name'") != std::string::npos);

        r = good_request();
        r.network->bridge = "vmbr0:1";
        CHECK(rejected(r).find("--bridge") != std::string::npos);

        r = good_request();
        r.network->confirm_timeout_seconds = 5;
        CHECK(rejected(r).find("--confirm-timeout") != std::string::npos);
    }

    TEST_CASE("a saved plan gets the checks the command line gets")
    {
        plan::Plan p;
        p.request = good_request();
        auto doc = plan::plan_to_json(p);
        CHECK(plan::plan_from_json(doc));

        auto bad_mode = doc;
        bad_mode["request"]["network"]["bond_mode"] = "fastest";
        auto parsed = plan::plan_from_json(bad_mode);
        REQUIRE_FALSE(parsed);
        CHECK(std::string(parsed.error().what()).find("--bond-mode 'fastest'") != std::string::npos);

        auto bad_vm = doc;
        bad_vm["request"]["vm"] = "101; rm -rf /";
        CHECK_FALSE(plan::plan_from_json(bad_vm));

        auto bad_nic = doc;
        bad_nic["request"]["network"]["bond_slaves"] = {"enp66s0f0\nauto evil"};
        CHECK_FALSE(plan::plan_from_json(bad_nic));
    }
}

TEST_SUITE("plan::request")
{
    TEST_CASE("--node-scan: a cluster mapping on its own, Proxmox VE node names, each node once")
    {
        plan::Request r;
        r.gpus = "all";
        r.mapping = "v100";
        r.node_scans = {{"gpu1", "/tmp/gpu1.json"}, {"gpu-2", "/tmp/gpu2.json"}};
        CHECK(rejected(r).empty());

        plan::Request with_vm = r;
        with_vm.vm = "101";
        with_vm.vmid = 101;
        CHECK(rejected(with_vm).find("--node-scan builds a cluster mapping on its own") == 0);
        plan::Request no_mapping = r;
        no_mapping.mapping.reset();
        CHECK(rejected(no_mapping).find("--node-scan needs --mapping") == 0);
        plan::Request no_gpus = r;
        no_gpus.gpus.clear();
        CHECK(rejected(no_gpus).find("--node-scan needs --mapping") == 0);
        plan::Request libvirt = r;
        libvirt.backend = plan::Backend::libvirt;
        CHECK(rejected(libvirt).find("--node-scan builds a cluster mapping on its own") == 0);
        for (const char* bad : {"-gpu1", "gpu1-", "gpu_1", "gpu1.example", "", "g\xc3\xa9"}) {
            CAPTURE(bad);
            plan::Request named = r;
            named.node_scans[0].node = bad;
            CHECK(rejected(named).find("is not a Proxmox VE node name") != std::string::npos);
        }
        plan::Request twice = r;
        twice.node_scans[1].node = "gpu1";
        CHECK(rejected(twice) == "--node-scan: node gpu1 is given twice");
        plan::Request no_file = r;
        no_file.node_scans[0].file.clear();
        CHECK(rejected(no_file) == "--node-scan gpu1= names no file");
    }

    TEST_CASE("--node-scan round-trips through a saved plan's request")
    {
        plan::Request r;
        r.gpus = "all";
        r.mapping = "v100";
        r.node_scans = {{"gpu1", "/tmp/a b.json"}, {"gpu2", "/tmp/gpu2.json"}};
        const auto back = plan::request_from_json(plan::request_to_json(r));
        REQUIRE(back);
        REQUIRE(back->node_scans.size() == 2);
        CHECK(back->node_scans[0].node == "gpu1");
        CHECK(back->node_scans[0].file == "/tmp/a b.json");
        CHECK(back->node_scans[1].node == "gpu2");
        plan::Request plain;
        plain.vm = "101";
        plain.vmid = 101;
        plain.gpus = "all";
        CHECK_FALSE(plan::request_to_json(plain).contains("node_scans")); // plans without it keep their bytes
    }

    TEST_CASE("--ct: a container VMID, its own --gpus, each once, not the VM's VMID; round-trips")
    {
        plan::Request r;
        r.vm = "101";
        r.vmid = 101;
        r.gpus = "0,1";
        r.containers = {{"105", "2"}, {"106", "2"}};
        CHECK(rejected(r).empty());
        plan::Request bad = r;
        bad.containers[1].ct = "0105";
        CHECK(rejected(bad) == "--ct 0105: write the VMID without leading zeros");
        bad.containers[1].ct = "99";
        CHECK(rejected(bad) == "--ct 99: VMID is outside 100-999999999 (Proxmox VE's VMID range)");
        bad.containers[1].ct = "ct6";
        CHECK(rejected(bad) == "--ct must be a numeric container VMID, not 'ct6'");
        bad.containers[1] = {"105", "3"};
        CHECK(rejected(bad) == "--ct 105 is given twice");
        bad.containers[1] = {"101", "3"};
        CHECK(rejected(bad) == "--ct 101 is also --vm: a VMID is a VM or a container, not both");
        bad.containers[1] = {"106", ""};
        CHECK(rejected(bad) == "--ct 106 needs its own --gpus after it (e.g. --ct 106 --gpus 2)");
        bad = r;
        bad.backend = plan::Backend::libvirt;
        bad.vmid.reset();
        CHECK(rejected(bad).starts_with("--ct gives cards to a Proxmox VE container"));
        const auto back = plan::request_from_json(plan::request_to_json(r));
        REQUIRE(back);
        REQUIRE(back->containers.size() == 2);
        CHECK(back->containers[0].ct == "105");
        CHECK(back->containers[1].gpus == "2");
        plan::Request plain = r;
        plain.containers.clear();
        CHECK_FALSE(plan::request_to_json(plain).contains("containers")); // plans without it keep their bytes
    }
}
