// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include "format/pve_config.hpp"
#include "format/pve_mapping.hpp"

using namespace passthru::format::pve;

TEST_SUITE("format::pve_mapping")
{
    TEST_CASE("the node name is the host name up to the first dot")
    {
        CHECK(node_name_from_hostname("pve1\n") == "pve1");
        CHECK(node_name_from_hostname("pve1.lab.example\n") == "pve1");
        CHECK_FALSE(node_name_from_hostname("\n"));
        CHECK_FALSE(node_name_from_hostname(".example"));
        CHECK_FALSE(node_name_from_hostname("a b"));
    }

    TEST_CASE("which functions a VM config passes: raw ids and this node's mapping paths")
    {
        const auto mappings = PciMappingFile::parse("gpus\n"
                                                    "\tmap id=10de:1e07,node=pve1,path=0000:01:00\n"
                                                    "\tmap id=10de:1e07,node=pve2,path=0000:41:00\n"
                                                    "\n"
                                                    "nic\n"
                                                    "\tmap id=8086:1521,node=pve1,path=0000:42:00.0;0000:42:00.1\n");
        const auto config = VmConfig::parse("memory: 8192\n"
                                            "hostpci0: mapping=gpus,pcie=1\n"
                                            "hostpci1: 0000:81:00,pcie=1\n"
                                            "hostpci2: mapping=nic\n"
                                            "net0: virtio=BC:24:11:00:00:01,bridge=vmbr0\n"
                                            "\n"
                                            "[PENDING]\n"
                                            "hostpci3: 82:00\n");
        auto on_pve1 = passed_ids(config, "", &mappings, std::string("pve1"));
        REQUIRE(on_pve1.size() == 3);
        CHECK(on_pve1[0].key == "hostpci0");
        CHECK(on_pve1[0].ids == std::vector<std::string>{"0000:01:00"});
        CHECK(on_pve1[1].ids == std::vector<std::string>{"0000:81:00"});
        CHECK(on_pve1[2].ids == std::vector<std::string>{"0000:42:00.0", "0000:42:00.1"});

        auto on_pve2 = passed_ids(config, "", &mappings, std::string("pve2"));
        CHECK(on_pve2[0].ids == std::vector<std::string>{"0000:41:00"});
        CHECK(on_pve2[2].ids.empty());

        // Node unknown: every node's entries count (fail closed).
        auto unknown = passed_ids(config, "", &mappings, std::nullopt);
        CHECK(unknown[0].ids == std::vector<std::string>{"0000:01:00", "0000:41:00"});

        // No mapping file: a mapping passes nothing that can be named.
        auto no_file = passed_ids(config, "", nullptr, std::string("pve1"));
        CHECK(no_file[0].ids.empty());

        auto pending = passed_ids(config, "PENDING", &mappings, std::string("pve1"));
        REQUIRE(pending.size() == 1);
        CHECK(pending[0].ids == std::vector<std::string>{"82:00"});
    }
}
