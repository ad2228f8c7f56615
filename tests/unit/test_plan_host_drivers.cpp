// SPDX-License-Identifier: GPL-2.0-or-later
// Host drivers that exist only in newer kernels (drivers.json "since_kernel", nova_core):
// decided by libkmod on the fixture's own module tree, or by the kernel version when the
// tree has none.
#include <doctest/doctest.h>

#include <filesystem>

#include "../support/temp_dir.hpp"
#include "plan/host/drivers.hpp"
#include "plan/host/host_detail.hpp"

using namespace passthru;
using plan::detail::HostDriver;
using plan::detail::HostDriverData;

namespace {

util::HostFs fixture_fs(const std::string& name)
{
    auto fs = util::HostFs::open(std::filesystem::path(PASSTHRU_FIXTURES_DIR) / "hosts" / name);
    REQUIRE(fs);
    return std::move(*fs);
}

HostDriverData data_with_nova_core()
{
    HostDriverData data;
    HostDriver nouveau;
    nouveau.module = "nouveau";
    nouveau.why = "nouveau";
    HostDriver nova;
    nova.module = "nova_core";
    nova.why = "nova_core";
    nova.since_kernel = std::pair{6, 15};
    data.drivers = {nouveau, nova};
    return data;
}

std::vector<std::string> modules(const HostDriverData& data)
{
    std::vector<std::string> out;
    out.reserve(data.drivers.size());
    for (const auto& d : data.drivers) {
        out.push_back(d.module);
    }
    return out;
}

} // namespace

TEST_CASE("libkmod on the fixture's module tree: nova_core in 7.0.2-2, not in 6.17.2-1")
{
    const auto pve92 = fixture_fs("pve92-epyc-4x2080ti");
    CHECK(plan::detail::target_has_module(pve92, "7.0.2-2-pve", "nova_core") == true);
    CHECK(plan::detail::target_has_module(pve92, "7.0.2-2-pve", "nova-core") == true);
    CHECK(plan::detail::target_has_module(pve92, "7.0.2-2-pve", "vfio_virqfd") == false);
    CHECK(plan::detail::target_has_module(pve92, "6.17.2-1-pve", "nova_core") == std::nullopt);
    const auto pve91 = fixture_fs("pve91-epyc-4x2080ti-zfs");
    CHECK(plan::detail::target_has_module(pve91, "6.17.2-1-pve", "nova_core") == false);
    CHECK(plan::detail::target_has_module(pve91, "6.17.2-1-pve", "vfio_pci") == true);
    CHECK(plan::detail::target_module_builtin(pve91, "6.17.2-1-pve", "simpledrm") == true);
}

TEST_CASE("target_alias_modules: what the module tree's aliases name for a function, by its modalias")
{
    const auto pve92 = fixture_fs("pve92-epyc-4x2080ti");
    scan::PciDevice gpu;
    gpu.vendor = 0x10de;
    gpu.device = 0x1e07;
    gpu.subsystem_vendor = 0x10de;
    gpu.subsystem_device = 0x12a4;
    gpu.class_code = 0x030000;
    CHECK(plan::detail::target_alias_modules(pve92, "7.0.2-2-pve", gpu) == std::vector<std::string>{"nouveau", "nova_core"});
    scan::PciDevice audio = gpu;
    audio.device = 0x10f7;
    audio.class_code = 0x040300;
    CHECK(plan::detail::target_alias_modules(pve92, "7.0.2-2-pve", audio) == std::vector<std::string>{"snd_hda_intel"});
    scan::PciDevice usb = gpu;
    usb.device = 0x1ad6;
    usb.class_code = 0x0c0330;
    CHECK(plan::detail::target_alias_modules(pve92, "7.0.2-2-pve", usb) == std::vector<std::string>{"xhci_pci"});
    // no module tree for that kernel, or an id not known: nothing to say
    CHECK(plan::detail::target_alias_modules(pve92, "6.17.2-1-pve", gpu).empty());
    scan::PciDevice unknown = gpu;
    unknown.subsystem_device.reset();
    CHECK(plan::detail::target_alias_modules(pve92, "7.0.2-2-pve", unknown).empty());
}

TEST_CASE("drivers_for_kernel keeps nova_core only where the target kernel has it")
{
    std::vector<std::string> why;
    const auto pve92 = fixture_fs("pve92-epyc-4x2080ti");
    auto kept = plan::detail::drivers_for_kernel(pve92, std::string("7.0.2-2-pve"), std::pair{7, 0}, data_with_nova_core(), why);
    CHECK(modules(kept) == std::vector<std::string>{"nouveau", "nova_core"});
    REQUIRE(why.size() == 1);
    CHECK(why[0] == "includes nova_core: the module tree of kernel 7.0.2-2-pve has it (asked through libkmod)");

    why.clear();
    const auto pve91 = fixture_fs("pve91-epyc-4x2080ti-zfs");
    kept = plan::detail::drivers_for_kernel(pve91, std::string("6.17.2-1-pve"), std::pair{6, 17}, data_with_nova_core(), why);
    CHECK(modules(kept) == std::vector<std::string>{"nouveau"});
    REQUIRE(why.size() == 1);
    CHECK(why[0] == "leaves out nova_core: the module tree of kernel 6.17.2-1-pve does not have it (asked through libkmod)");

    // A PVE 8 fixture without a module tree: the kernel version decides.
    const auto pve8 = fixture_fs("epyc-4x2080ti");
    why.clear();
    kept = plan::detail::drivers_for_kernel(pve8, std::string("6.2.16-3-pve"), std::pair{6, 2}, data_with_nova_core(), why);
    CHECK(modules(kept) == std::vector<std::string>{"nouveau"});
    CHECK(why.at(0).find("exists from Linux 6.15 on") != std::string::npos);
    why.clear();
    kept = plan::detail::drivers_for_kernel(pve8, std::string("6.17.2-1-pve"), std::pair{6, 17}, data_with_nova_core(), why);
    CHECK(modules(kept) == std::vector<std::string>{"nouveau", "nova_core"});
}

namespace {

std::string drivers_error(const std::string& text)
{
    test::TempDir root;
    root.write("etc/passthru/profiles/host/drivers.json", text);
    auto fs = util::HostFs::open(root.path());
    REQUIRE(fs);
    const data::DataDir data(*fs, std::nullopt);
    const auto loaded = data::load_host_drivers(data);
    REQUIRE_FALSE(loaded);
    CHECK(loaded.error().code() == Errc::usage);
    return loaded.error().what();
}

} // namespace

TEST_SUITE("plan::host::drivers schema")
{
    TEST_CASE("the schema version, unknown fields and mistyped ones")
    {
        const std::string file = "/etc/passthru/profiles/host/drivers.json (under the root): ";
        CHECK(drivers_error(R"({"schema": "passthru.host-drivers/2", "drivers": []})")
              == file + "schema must be \"passthru.host-drivers/1\"");
        CHECK(drivers_error(R"({"schema": "passthru.host-drivers/1", "drivers": [], "modules": {}})")
              == file + "modules is not a field of passthru.host-drivers/1");
        CHECK(drivers_error(R"({"schema": "passthru.host-drivers/1", "drivers": [{"module": "nouveau", "why": "w", "softdep": true}]})")
              == file + "drivers[0].softdep is not a field of a driver");
        CHECK(drivers_error(
                  R"({"schema": "passthru.host-drivers/1", "drivers": [{"module": "nouveau", "why": "w", "claims": {"device": "1e07"}}]})")
              == file + "drivers[0].claims.device is not a field of claims (vendor, kind, class)");
        CHECK(drivers_error(
                  R"({"schema": "passthru.host-drivers/1", "drivers": [{"module": "nouveau", "why": "w", "claims": {"class": "03"}}]})")
              == file + "drivers[0].claims.class must be 4 lower-case hex digits, not '03'");
        CHECK(drivers_error(R"({"schema": "passthru.host-drivers/1", "drivers": {}})") == file + "drivers must be a list");
    }

    TEST_CASE("a blacklist entry belongs to a GPU vendor: its own vendor, else claims.vendor")
    {
        const std::string file = "/etc/passthru/profiles/host/drivers.json (under the root): ";
        CHECK(drivers_error(R"({"schema": "passthru.host-drivers/1", "drivers": [{"module": "fb", "why": "w", "blacklist": true}]})")
              == file + "drivers[0].blacklist needs the GPU vendor the driver belongs to (\"vendor\" or claims.vendor)");
        CHECK(drivers_error(
                  R"({"schema": "passthru.host-drivers/1", "drivers": [{"module": "fb", "why": "w", "blacklist": true, "vendor": "AMD"}]})")
              == file + "drivers[0].vendor must be 4 lower-case hex digits, not 'AMD'");
        test::TempDir root;
        root.write("etc/passthru/profiles/host/drivers.json", R"({"schema": "passthru.host-drivers/1", "drivers": [
            {"module": "amdgpu", "claims": {"vendor": "1002", "kind": "display"}, "why": "w", "blacklist": true},
            {"module": "radeonfb", "vendor": "1002", "why": "w", "blacklist": true, "framebuffer": true},
            {"module": "snd_hda_intel", "claims": {"class": "0403"}, "why": "w"}]})");
        auto fs = util::HostFs::open(root.path());
        REQUIRE(fs);
        const auto loaded = data::load_host_drivers(data::DataDir(*fs, std::nullopt));
        REQUIRE(loaded);
        REQUIRE(loaded->drivers.size() == 3);
        CHECK(loaded->drivers[0].owner == std::uint16_t{0x1002});
        CHECK(loaded->drivers[1].owner == std::uint16_t{0x1002});
        CHECK_FALSE(loaded->drivers[1].claims_something);
        CHECK_FALSE(loaded->drivers[2].owner);
    }
}
