// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include "../support/temp_dir.hpp"
#include "plan/plan_json.hpp"
#include "plan/planner.hpp"
#include "util/base64.hpp"
#include "util/sha256.hpp"

using namespace passthru;

namespace {

plan::Plan sample_plan()
{
    plan::Plan p;
    p.request.vm = "101";
    p.request.vmid = 101;
    p.request.gpus = "all";
    p.request.acs_override = plan::AcsOverride::yes;
    p.request.network = plan::NetworkRequest{};
    p.request.network->bond_slaves = {"enp1s0", "enp2s0"};
    p.request.network->address = "192.168.1.2/24";
    plan::FileChange create;
    create.path = "/etc/modprobe.d/passthru-vfio.conf";
    create.action = plan::FileAction::create;
    create.after = "options vfio-pci ids=10de:1e07\n";
    create.reasons = {"binds by id"};
    plan::FileChange modify;
    modify.path = "/etc/default/grub";
    modify.action = plan::FileAction::modify;
    modify.before = "A=\"quiet amd_iommu=on\"\n";
    modify.before_sha256 = util::sha256_hex(*modify.before);
    modify.after = "A=\"quiet\"\n";
    modify.reasons = {"removes amd_iommu=on"};
    plan::FileChange remove;
    remove.path = "/etc/modprobe.d/vfio.conf";
    remove.action = plan::FileAction::remove;
    remove.before = "options vfio-pci ids=10de:1e84, 10de:10f8\n";
    remove.before_sha256 = util::sha256_hex(*remove.before);
    p.files = {create, modify, remove};
    p.commands = {{{"update-initramfs", "-u", "-k", "all"}, "rebuild"}};
    p.kernel_args = {{"iommu=pt"}, {"amd_iommu=on"}};
    p.vfio_ids = {"10de:1e07"};
    p.binding = "ids";
    p.gpus = {{"0000:01:00", "RTX 2080 Ti", {"0000:01:00.0"}, {"10de:1e07"}, {12}, true}};
    p.warnings = {"w"};
    p.notes = {"n"};
    return p;
}

} // namespace

TEST_SUITE_BEGIN("plan::plan_json");

TEST_CASE("a plan round-trips through passthru.plan/1")
{
    const auto p = sample_plan();
    const auto doc = plan::plan_to_json(p);
    CHECK(doc["schema"] == "passthru.plan/1");
    CHECK(doc["files"][2]["action"] == "delete");
    CHECK(doc["files"][2]["content"].is_null());
    CHECK(doc["files"][0]["before_sha256"].is_null());
    auto back = plan::plan_from_json(nlohmann::json::parse(doc.dump()));
    REQUIRE(back);
    CHECK(plan::plan_to_json(*back) == doc);
    CHECK(back->files[1].before == p.files[1].before);
    CHECK(back->request.network->bond_slaves == p.request.network->bond_slaves);
    CHECK(back->request.acs_override == plan::AcsOverride::yes);
    CHECK(back->gpus[0].boot_vga);
}

TEST_CASE("a binary file (a ROM image) goes as base64, its checksums of the bytes, and comes back byte for byte")
{
    auto p = sample_plan();
    p.request.romfiles = {{"0000:01:00", "/root/gpu.rom"}};
    plan::FileChange rom;
    rom.path = "/usr/share/kvm/passthru-10de-1e07-0123456789abcdef.rom";
    rom.action = plan::FileAction::modify;
    rom.before = std::string("\x55\xaa\x00\xff", 4);
    rom.before_sha256 = util::sha256_hex(*rom.before);
    rom.after = std::string("\x55\xaa\x02\x00\x80\xfe", 6);
    rom.binary = true;
    p.files.push_back(rom);
    const auto doc = plan::plan_to_json(p);
    const auto& f = doc["files"][3];
    CHECK(f["encoding"] == "base64");
    CHECK(f["content"] == util::base64_encode(*rom.after));
    CHECK(f["after_sha256"] == util::sha256_hex(*rom.after));
    CHECK_FALSE(doc["files"][0].contains("encoding")); // text files stay as they were
    CHECK(doc["request"]["romfiles"][0]["file"] == "/root/gpu.rom");
    auto back = plan::plan_from_json(nlohmann::json::parse(doc.dump()));
    REQUIRE(back);
    CHECK(back->files[3].binary);
    CHECK(back->files[3].after == rom.after);
    CHECK(back->files[3].before == rom.before);
    CHECK(back->request.romfiles[0].slot == "0000:01:00");
    CHECK(plan::plan_to_json(*back) == doc);
    // bytes changed in the document no longer match their checksum; a broken base64 or an
    // unknown encoding is no plan
    auto bad = doc;
    bad["files"][3]["content"] = util::base64_encode("\x55\xaa\x02\x00\x80\xff");
    CHECK_FALSE(plan::plan_from_json(bad));
    bad = doc;
    bad["files"][3]["content"] = "VaoCAID+=";
    CHECK_FALSE(plan::plan_from_json(bad));
    bad = doc;
    bad["files"][3]["encoding"] = "hex";
    const auto refused = plan::plan_from_json(bad);
    REQUIRE_FALSE(refused);
    CHECK(std::string(refused.error().what()).find("encoding must be base64") != std::string::npos);
}

TEST_CASE("base64: every length round-trips; only the canonical text decodes")
{
    std::string bytes;
    for (int n = 0; n < 70; ++n) {
        CHECK(util::base64_decode(util::base64_encode(bytes)) == bytes);
        bytes += static_cast<char>((n * 37 + 11) & 0xff);
    }
    CHECK(util::base64_encode("foob") == "Zm9vYg==");
    CHECK(util::base64_decode("Zm9vYg==") == "foob");
    for (const char* bad : {"Zm9vYg=", "Zm9vYh==", "Zm9v Yg==", "Zm=vYg==", "Zg==Zg==", "Z===", "Zm9vYg\n="}) {
        CAPTURE(bad);
        CHECK_FALSE(util::base64_decode(bad));
    }
}

TEST_CASE("a tampered or foreign document is rejected with the field")
{
    auto doc = plan::plan_to_json(sample_plan());
    SUBCASE("schema")
    {
        doc["schema"] = "passthru.plan/2";
        CHECK_FALSE(plan::plan_from_json(doc));
    }
    SUBCASE("content no longer matches its hash")
    {
        doc["files"][0]["content"] = "options vfio-pci ids=10de:1e07, 10de:10f7\n";
        const auto r = plan::plan_from_json(doc);
        REQUIRE_FALSE(r);
        CHECK(std::string(r.error().what()).find("files[0]") != std::string::npos);
    }
    SUBCASE("relative path")
    {
        doc["files"][0]["path"] = "etc/../../x";
        CHECK_FALSE(plan::plan_from_json(doc));
    }
    SUBCASE("delete with content")
    {
        doc["files"][2]["content"] = "x";
        doc["files"][2]["after_sha256"] = nullptr;
        CHECK_FALSE(plan::plan_from_json(doc));
    }
    SUBCASE("bad action")
    {
        doc["files"][1]["action"] = "chmod";
        CHECK_FALSE(plan::plan_from_json(doc));
    }
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("data::DataDir");

TEST_CASE("/etc/passthru under the root overrides the shipped templates, and values go in unescaped")
{
    test::TempDir root;
    test::TempDir shipped;
    shipped.write("templates/t.mustache", "a={{a}}\n{{#list}}- {{.}}\n{{/list}}\n\n\n{{#no}}x{{/no}}\n");
    auto fs = util::HostFs::open(root.path());
    REQUIRE(fs);
    data::DataDir data(*fs, shipped.path());
    auto out = plan::render_template(data, "t.mustache", {{"a", "<&\">"}, {"list", {"x", "y"}}, {"no", false}});
    REQUIRE(out);
    CHECK(*out == "a=<&\">\n- x\n- y\n");
    root.write("etc/passthru/templates/t.mustache", "override {{a}}\n");
    // A data::DataDir reads each file once: one command sees one version of it.
    out = plan::render_template(data, "t.mustache", {{"a", "1"}});
    REQUIRE(out);
    CHECK(*out == "a=1\n");
    data::DataDir next(*fs, shipped.path());
    out = plan::render_template(next, "t.mustache", {{"a", "1"}});
    REQUIRE(out);
    CHECK(*out == "override 1\n");
    CHECK(next.origin("templates", "t.mustache")->find("/etc/passthru/templates/t.mustache") != std::string::npos);
    CHECK_FALSE(next.read("templates", "../t.mustache"));
    CHECK_FALSE(plan::render_template(next, "missing.mustache", {}));
}

TEST_CASE("the data directory lists and reads every shipped GPU profile as JSON")
{
    test::TempDir root;
    auto fs = util::HostFs::open(root.path());
    REQUIRE(fs);
    data::DataDir data(*fs, std::nullopt);
    const auto profiles = data.list("profiles", "gpus");
    CHECK(profiles.size() >= 12);
    for (const auto& name : profiles) {
        auto text = data.read("profiles", "gpus/" + name);
        REQUIRE(text);
        const auto j = nlohmann::json::parse(*text);
        CHECK(j.contains("ids"));
        CHECK(j["vram_gib"].is_number());
    }
}

TEST_SUITE_END();

TEST_CASE("the backend has one word each way; a recorded request may be read for its shape only")
{
    CHECK(plan::to_string(plan::Backend::proxmox) == "proxmox");
    CHECK(plan::to_string(plan::Backend::libvirt) == "libvirt");
    CHECK(plan::backend_from("libvirt") == plan::Backend::libvirt);
    CHECK_FALSE(plan::backend_from("Proxmox"));
    plan::Request r;
    r.vm = "guest";
    r.backend = plan::Backend::libvirt;
    CHECK(plan::request_to_json(r)["backend"] == "libvirt");
    CHECK(plan::request_from_json(plan::request_to_json(r))->backend == plan::Backend::libvirt);

    // A Proxmox VE request for a VM that is no VMID: refused as a request to
    // act on, read as a recorded one.
    r.backend = plan::Backend::proxmox;
    const auto doc = plan::request_to_json(r);
    CHECK_FALSE(plan::request_from_json(doc));
    REQUIRE(plan::request_from_json(doc, plan::RequestCheck::shape_only));
    CHECK(plan::request_from_json(doc, plan::RequestCheck::shape_only)->vm == "guest");
}

TEST_CASE("a selected card: one key set, written by the plan and read back")
{
    const plan::SelectedGpu g{"0000:01:00", "RTX", {"0000:01:00.0"}, {"10de:1e07"}, {4}, true};
    const auto doc = plan::selected_gpu_to_json(g);
    CHECK(doc
          == nlohmann::json{{"slot", "0000:01:00"},
                            {"name", "RTX"},
                            {"functions", {"0000:01:00.0"}},
                            {"ids", {"10de:1e07"}},
                            {"iommu_groups", {4}},
                            {"boot_vga", true}});
    plan::Plan p;
    p.gpus = {g};
    p.nvswitches = {g};
    const auto plan_doc = plan::plan_to_json(p);
    CHECK(plan_doc["gpus"][0] == doc);
    CHECK(plan_doc["nvswitches"][0] == doc);
    auto back = plan::selected_gpu_from_json(doc, "gpus[0]");
    REQUIRE(back);
    CHECK(plan::selected_gpu_to_json(*back) == doc);
    auto bad = plan::selected_gpu_from_json(nlohmann::json{{"slot", 1}, {"functions", nlohmann::json::array()}}, "gpus[3]");
    REQUIRE_FALSE(bad);
    CHECK(std::string(bad.error().what()) == "gpus[3].slot must be a string");
}
