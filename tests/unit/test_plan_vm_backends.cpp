// SPDX-License-Identifier: GPL-2.0-or-later
// plan/vm/backends.cpp: the VM backends as one table. Each row's word round-trips,
// and what a row says about --vm, --mapping and --node-scan is what the request
// checks do.
#include <set>

#include <doctest/doctest.h>

#include "plan/request.hpp"

using namespace passthru;

TEST_SUITE("plan::vm::backends")
{
    TEST_CASE("every row: its word, its planner, Proxmox VE first")
    {
        const auto rows = plan::backend_rows();
        REQUIRE(rows.size() >= 2);
        CHECK(rows.front().backend == plan::Backend::proxmox);
        CHECK(rows.front().backend == plan::Request{}.backend);
        std::set<std::string_view> names;
        for (const auto& row : rows) {
            CAPTURE(row.name);
            CHECK(names.insert(row.name).second);
            CHECK(&plan::backend_row(row.backend) == &row);
            CHECK(plan::to_string(row.backend) == row.name);
            CHECK(plan::backend_from(row.name) == row.backend);
            CHECK(static_cast<bool>(row.plan_vm));
            CHECK(plan::backend_names().find(std::string(row.name)) != std::string::npos);
        }
        CHECK_FALSE(plan::backend_from("xen"));
        CHECK(plan::backend_names() == "proxmox or libvirt");
    }

    TEST_CASE("the rows of the two backends")
    {
        const auto& proxmox = plan::backend_row(plan::Backend::proxmox);
        CHECK(proxmox.name == "proxmox");
        CHECK(proxmox.numeric_vmid);
        CHECK(proxmox.cluster_mapping);
        CHECK_FALSE(proxmox.connect_uri);
        const auto& libvirt = plan::backend_row(plan::Backend::libvirt);
        CHECK(libvirt.name == "libvirt");
        CHECK_FALSE(libvirt.numeric_vmid);
        CHECK_FALSE(libvirt.cluster_mapping);
        CHECK(libvirt.connect_uri);
    }

    TEST_CASE("a row's numeric_vmid and cluster_mapping are what the request checks")
    {
        for (const auto& row : plan::backend_rows()) {
            CAPTURE(row.name);
            plan::Request named;
            named.backend = row.backend;
            named.vm = "guest1";
            CHECK(static_cast<bool>(plan::validate_request(named)) == !row.numeric_vmid);

            plan::Request nodes;
            nodes.backend = row.backend;
            nodes.mapping = "gpus";
            nodes.gpus = "all";
            nodes.node_scans.push_back({"pve2", "/tmp/pve2.json"});
            CHECK(static_cast<bool>(plan::validate_request(nodes)) == row.cluster_mapping);
        }
    }
}
