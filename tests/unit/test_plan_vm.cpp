// SPDX-License-Identifier: GPL-2.0-or-later
// The VM side: PVE config and mapping files (lossless round trip, PVE's
// layout for new lines), VM profiles, plan_vm through make_plan on a copy of
// a fixture host, and the libvirt backend against test:///default.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../support/shipped_data.hpp"
#include "../support/temp_dir.hpp"
#include "apply/libvirt_apply.hpp"
#include "format/pve_config.hpp"
#include "format/pve_mapping.hpp"
#include "plan/planner.hpp"
#include "plan/vm/profile.hpp"
#include "scan/libvirt_domain.hpp"
#include "scan/scanner.hpp"
#include "util/command_runner.hpp"

using namespace passthru;
using format::pve::HostPci;
using format::pve::PciMappingFile;
using format::pve::VmConfig;

namespace {

// The process's fd 2 goes to FILE while the object lives; text() puts it back
// and returns what was written there (by libvirt's C code as much as by C++).
class CapturedStderr
{
public:
    explicit CapturedStderr(std::filesystem::path file) : m_file(std::move(file))
    {
        std::fflush(stderr);
        m_saved = ::dup(STDERR_FILENO);
        const int fd = ::open(m_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        REQUIRE(m_saved >= 0);
        REQUIRE(fd >= 0);
        REQUIRE(::dup2(fd, STDERR_FILENO) == STDERR_FILENO);
        ::close(fd);
    }
    ~CapturedStderr() { restore(); }
    CapturedStderr(const CapturedStderr&) = delete;
    CapturedStderr& operator=(const CapturedStderr&) = delete;

    std::string text()
    {
        restore();
        std::ifstream in(m_file);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

private:
    void restore()
    {
        if (m_saved >= 0) {
            std::fflush(stderr);
            ::dup2(m_saved, STDERR_FILENO);
            ::close(m_saved);
            m_saved = -1;
        }
    }
    std::filesystem::path m_file;
    int m_saved = -1;
};

std::string read_text(const std::filesystem::path& p)
{
    std::ifstream in(p, std::ios::binary);
    REQUIRE(in.good());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::filesystem::path golden_dir()
{
    return std::filesystem::path(PASSTHRU_FIXTURES_DIR).parent_path() / "golden" / "vm";
}

// A copy of a fixture host, scanned and planned.
struct VmHost
{
    test::TempDir dir;
    explicit VmHost(const char* fixture) { test::copy_tree(std::filesystem::path(PASSTHRU_FIXTURES_DIR) / "hosts" / fixture, dir.path()); }
    Result<plan::Plan> plan(const plan::Request& req) const
    {
        auto fs = util::HostFs::open(dir.path()).value();
        util::CommandRunner runner(util::RunMode::record);
        auto inv = scan::scan_host(fs, runner, test::shipped_scan_data(fs)).value();
        data::DataDir data(fs, std::nullopt);
        return plan::make_plan(inv, fs, data, req);
    }
};

plan::Request vm_request(std::uint64_t vmid, const std::string& gpus = "all")
{
    plan::Request req;
    req.vm = std::to_string(vmid);
    req.vmid = vmid;
    req.gpus = gpus;
    return req;
}

const plan::FileChange* change_of(const plan::Plan& p, const std::string& path)
{
    const auto it = std::find_if(p.files.begin(), p.files.end(), [&](const plan::FileChange& f) { return f.path == path; });
    return it == p.files.end() ? nullptr : &*it;
}

bool refused_with(const plan::Plan& p, const std::string& text)
{
    return std::any_of(p.refusals.begin(), p.refusals.end(),
                       [&](const plan::Refusal& r) { return r.message.find(text) != std::string::npos; });
}

} // namespace

TEST_SUITE("plan::pve_config")
{
    TEST_CASE("every golden config and fixture config round-trips byte for byte")
    {
        for (const auto& entry : std::filesystem::directory_iterator(golden_dir())) {
            if (entry.path().extension() != ".conf") {
                continue;
            }
            const std::string text = read_text(entry.path());
            CAPTURE(entry.path());
            CHECK(VmConfig::parse(text).str() == text);
        }
        // Odd inputs: no final newline, CRLF, unknown lines, empty file.
        for (const std::string text : {"cores: 4", "cores: 4\r\nname: x\r\n", "garbage line\n\n[PENDING]\n", "", "\n\n"}) {
            CHECK(VmConfig::parse(text).str() == text);
        }
    }

    TEST_CASE("set() rewrites in place and inserts where PVE's sorted writer would")
    {
        VmConfig c = VmConfig::parse("#desc\nbios: ovmf\ncores: 4\nnuma: 0\n\n[PENDING]\nnuma: 1\n\n[snap]\nnuma: 0\n");
        c.set("numa", "1");
        c.set("hostpci0", "0000:01:00,pcie=1");
        c.set("balloon", "0");
        c.set("vmgenid", "x");
        CHECK(c.str()
              == "#desc\nballoon: 0\nbios: ovmf\ncores: 4\nhostpci0: 0000:01:00,pcie=1\nnuma: 1\nvmgenid: x\n\n"
                 "[PENDING]\nnuma: 1\n\n[snap]\nnuma: 0\n");
        CHECK(c.get("numa") == "1");
        CHECK(c.get("numa", "PENDING") == "1");
        CHECK(c.get("numa", "snap") == "0");
        CHECK(c.section_names() == std::vector<std::string>{"PENDING", "snap"});
    }

    TEST_CASE("pending keys include the delete list")
    {
        const VmConfig c = VmConfig::parse("cores: 4\n\n[PENDING]\ncores: 8\ndelete: hostpci0,!net1\n");
        CHECK(c.pending_keys() == std::vector<std::string>{"cores", "hostpci0", "net1"});
    }

    TEST_CASE("hostpci ids match like PVE's lspci prefix filter")
    {
        using format::pve::hostpci_id_covers;
        CHECK(hostpci_id_covers("01:00", "0000:01:00.3"));
        CHECK(hostpci_id_covers("0000:01:00", "0000:01:00.0"));
        CHECK(hostpci_id_covers("01:00.1", "0000:01:00.1"));
        CHECK_FALSE(hostpci_id_covers("01:00.1", "0000:01:00.0"));
        CHECK_FALSE(hostpci_id_covers("41:00", "0000:01:00.0"));
        CHECK_FALSE(hostpci_id_covers("01:00", "0001:01:00.0"));
        CHECK(hostpci_id_covers("0001:01:00", "0001:01:00.0"));

        using format::pve::valid_hostpci_id;
        CHECK(valid_hostpci_id("0000:01:00"));
        CHECK(valid_hostpci_id("01:00.0"));
        CHECK_FALSE(valid_hostpci_id("0000:0A:00"));
        CHECK_FALSE(valid_hostpci_id("01:00.0 "));

        const HostPci hp = HostPci::parse("01:00.0;01:00.1,pcie=1,x-vga=1");
        CHECK(hp.host_ids == std::vector<std::string>{"01:00.0", "01:00.1"});
        CHECK_FALSE(hp.mapping);
        CHECK(HostPci::parse("mapping=gpu,pcie=1").mapping == "gpu");
        CHECK(format::pve::PropertyString::parse("pcie=1,0000:01:00,x-vga=1").str() == "0000:01:00,pcie=1,x-vga=1");
    }
}

TEST_SUITE("plan::pve_mapping")
{
    const std::string k_pve_written = "gpu0\n\tmap id=10de:2204,node=pve1,path=0000:01:00,iommugroup=14,subsystem-id=1458:403b\n"
                                      "\tdescription RTX 3090\n\nnic\n\tmap id=8086:1521,node=pve1,path=0000:03:00.0\n\n";

    TEST_CASE("a file PVE wrote round-trips and its sections are found")
    {
        const PciMappingFile f = PciMappingFile::parse(k_pve_written);
        CHECK(f.str() == k_pve_written);
        REQUIRE(f.find("gpu0") != nullptr);
        REQUIRE(f.find("gpu0")->maps.size() == 1);
        const auto& m = f.find("gpu0")->maps.front();
        CHECK(m.node == "pve1");
        CHECK(m.paths == std::vector<std::string>{"0000:01:00"});
        CHECK(m.iommu_group == 14);
        CHECK(m.str() == "id=10de:2204,node=pve1,path=0000:01:00,iommugroup=14,subsystem-id=1458:403b");
    }

    TEST_CASE("new map lines and sections keep every existing byte")
    {
        PciMappingFile f = PciMappingFile::parse(k_pve_written);
        format::pve::MapEntry e;
        e.node = "pve2";
        e.paths = {"0000:41:00"};
        e.id = "10de:2204";
        e.iommu_group = 30;
        f.add_map("gpu0", e);
        f.add_section("gpu1", {e}, std::string("second card"));
        CHECK(f.str()
              == "gpu0\n\tmap id=10de:2204,node=pve1,path=0000:01:00,iommugroup=14,subsystem-id=1458:403b\n"
                 "\tdescription RTX 3090\n\tmap id=10de:2204,node=pve2,path=0000:41:00,iommugroup=30\n\n"
                 "nic\n\tmap id=8086:1521,node=pve1,path=0000:03:00.0\n\n"
                 "gpu1\n\tmap id=10de:2204,node=pve2,path=0000:41:00,iommugroup=30\n\tdescription second card\n\n");
        CHECK(PciMappingFile::parse(f.str()).find("gpu0")->maps.size() == 2);
    }

    TEST_CASE("ids and paths follow PVE's patterns")
    {
        CHECK(format::pve::valid_config_id("gpu"));
        CHECK(format::pve::valid_config_id("GPU-1"));
        CHECK_FALSE(format::pve::valid_config_id("g"));
        CHECK_FALSE(format::pve::valid_config_id("1gpu"));
        CHECK(format::pve::valid_map_path("0000:01:00"));
        CHECK_FALSE(format::pve::valid_map_path("01:00"));
    }
}

TEST_SUITE("plan::vm_profile")
{
    TEST_CASE("shipped profiles load; bad flags and vendor ids are rejected")
    {
        test::TempDir root;
        auto fs = util::HostFs::open(root.path()).value();
        data::DataDir data(fs, std::nullopt);
        const auto linux = plan::load_vm_profile(data, "linux-ml");
        REQUIRE(linux);
        CHECK_FALSE(linux->cpu_hidden);
        CHECK_FALSE(linux->hv_vendor_id);
        const auto windows = plan::load_vm_profile(data, "windows");
        REQUIRE(windows);
        CHECK(windows->cpu_hidden);
        CHECK(windows->hv_vendor_id);
        const auto missing = plan::load_vm_profile(data, "nosuch");
        REQUIRE_FALSE(missing);
        CHECK(missing.error().code() == Errc::usage);

        CHECK_FALSE(plan::parse_vm_profile("x", R"({"cpu": {"flags": ["+avx512f"]}})"));
        CHECK(plan::parse_vm_profile("x", R"({"cpu": {"flags": ["+pdpe1gb", "-md-clear"]}})"));
        CHECK_FALSE(plan::parse_vm_profile("x", R"({"cpu": {"hv_vendor_id": "much-too-long-id"}})"));
        CHECK_FALSE(plan::parse_vm_profile("x", R"({"machine": "pc-i440fx-8.1"})"));
        CHECK_FALSE(plan::parse_vm_profile("x", R"({"numa": false, "hugepages": "2"})"));
    }
}

TEST_SUITE("plan::vm::profile")
{
    TEST_CASE("a VM profile is read through the schema helper: one schema message, fields named by path")
    {
        const auto error_of = [](std::string_view text) {
            const auto p = plan::parse_vm_profile("x", text, "x.json");
            REQUIRE_FALSE(p);
            CHECK(p.error().code() == Errc::usage);
            return std::string(p.error().what());
        };
        const std::string at = "VM profile 'x' from x.json: ";
        CHECK(error_of(R"({"schema": "passthru.vm-profile/2"})") == at + "schema must be \"passthru.vm-profile/1\"");
        CHECK(error_of(R"({"schema": 1})") == at + "schema must be \"passthru.vm-profile/1\"");
        CHECK(error_of("[]") == at + "(document) must be a JSON object");
        CHECK(error_of(R"({"cpu": {"hidden": "yes"}})") == at + "cpu.hidden: expected true or false");
        CHECK(error_of(R"({"cpu": {"flags": ["+pcid", 3]}})") == at + "cpu.flags[1]: expected a string");
        CHECK(error_of(R"({"memory": {"min_mib": "8192"}})") == at + "memory.min_mib: expected an integer");
        CHECK(error_of(R"({"memory": {"base_mib": -1}})") == at + "memory.base_mib must be 0 or more");
        CHECK(error_of(R"({"create": {"cores": 4.5}})") == at + "create.cores: expected an integer");
        CHECK(error_of(R"({"balloon": "0"})") == at + "balloon: expected an integer");
        CHECK(error_of(R"({"hugepage": "2"})") == at + "hugepage is not a field of passthru.vm-profile/1");
        CHECK(error_of(R"({"cpu": {"flag": []}})") == at + "cpu.flag is not a field of cpu (type, flags, hidden, hv_vendor_id)");
        CHECK(error_of(R"({"efidisk": {"efitype": "8m"}})") == at + "efidisk.efitype must be 2m or 4m");
        CHECK(error_of(R"({"machine": "pc-i440fx-8.1"})") == at + "machine 'pc-i440fx-8.1' is not a q35 type (pcie=1 needs q35)");
        CHECK(error_of(R"({"cpu": {"flags": ["+pcid", "+avx512f"]}})").starts_with(at + "cpu.flags[1] '+avx512f' is not one of"));
    }

    TEST_CASE("a VM profile: null keeps the default, no balloon line for a null balloon, no schema reads as the first version")
    {
        const auto p = plan::parse_vm_profile("x", R"({"ostype": null, "balloon": null, "hugepages": null, "cpu": {"flags": null}})");
        REQUIRE(p);
        CHECK(p->ostype == "l26");
        CHECK_FALSE(p->balloon);
        CHECK_FALSE(p->hugepages);
        CHECK(p->cpu_flags.empty());
        const auto q = plan::parse_vm_profile("x", R"({"schema": "passthru.vm-profile/1", "name": "x", "comment": "c", "balloon": 512})");
        REQUIRE(q);
        CHECK(q->balloon == 512);
        CHECK(q->create_cores == 4);
    }
}

TEST_SUITE("plan::vm")
{
    TEST_CASE("an existing VM gets one function-less hostpci per card and keeps its other lines")
    {
        VmHost host("epyc-4x2080ti");
        host.dir.write("etc/pve/qemu-server/101.conf", read_text(golden_dir() / "snapshots-pending.conf"));
        const auto p = host.plan(vm_request(101));
        REQUIRE(p);
        CHECK_FALSE(p->refused());
        const auto* c = change_of(*p, "/etc/pve/qemu-server/101.conf");
        REQUIRE(c != nullptr);
        CHECK(c->action == plan::FileAction::modify);
        const VmConfig after = VmConfig::parse(*c->after);
        CHECK(after.get("hostpci0") == "0000:01:00,pcie=1");
        CHECK(after.get("hostpci3") == "0000:82:00,pcie=1");
        CHECK(after.get("numa") == "1");
        CHECK(after.get("balloon") == "0");
        CHECK(after.get("machine") == "pc-q35-8.1"); // already q35: kept
        // The sections after the current config are unchanged, byte for byte.
        const std::string& before = *c->before;
        CHECK(c->after->substr(c->after->find("\n[PENDING]")) == before.substr(before.find("\n[PENDING]")));
        const bool listed =
            std::any_of(c->reasons.begin(), c->reasons.end(), [](const std::string& r) { return r.starts_with("numa: 0 -> 1"); });
        CHECK(listed);
    }

    TEST_CASE("refusals: locked, running, card taken, VMID range")
    {
        SUBCASE("lock")
        {
            VmHost host("epyc-4x2080ti");
            host.dir.write("etc/pve/qemu-server/101.conf", "cores: 4\nlock: migrate\n");
            const auto p = host.plan(vm_request(101));
            REQUIRE(p);
            CHECK(refused_with(*p, "locked (lock: migrate)"));
            CHECK(p->files.empty());
        }
        SUBCASE("running")
        {
            VmHost host("epyc-4x2080ti");
            host.dir.write("etc/pve/qemu-server/101.conf", "cores: 4\n");
            host.dir.write("run/qemu-server/101.pid", "777\n");
            host.dir.write("proc/777/cmdline", std::string("kvm\0-pidfile\0/var/run/qemu-server/101.pid\0", 42));
            const auto p = host.plan(vm_request(101));
            REQUIRE(p);
            CHECK(refused_with(*p, "VM 101 is running"));
        }
        SUBCASE("another VM has the card through a mapping")
        {
            VmHost host("epyc-4x2080ti");
            host.dir.write("etc/pve/qemu-server/101.conf", "cores: 4\n");
            host.dir.write("etc/pve/qemu-server/250.conf", "hostpci0: mapping=train,pcie=1\nmachine: q35\n");
            host.dir.write("etc/pve/mapping/pci.cfg", "train\n\tmap id=10de:1e07,node=pve,path=0000:81:00\n\n");
            const auto p = host.plan(vm_request(101));
            REQUIRE(p);
            CHECK(refused_with(*p, "already given to VM 250"));
        }
        SUBCASE("the VM's own [PENDING] hostpci names a selected card")
        {
            // Proxmox applies it at the next start: a second slot would pass the card twice.
            VmHost host("epyc-4x2080ti");
            host.dir.write("etc/pve/qemu-server/101.conf", "cores: 4\n\n[PENDING]\nhostpci5: 0000:81:00.0;0000:81:00.1\n");
            const auto p = host.plan(vm_request(101));
            REQUIRE(p);
            CHECK(refused_with(*p, "VM 101 has a pending change that passes"));
            CHECK(refused_with(*p, "hostpci5: 0000:81:00.0;0000:81:00.1, in [PENDING]"));
            CHECK(p->files.empty());
        }
        SUBCASE("a [PENDING] hostpci of another device does not count")
        {
            VmHost host("epyc-4x2080ti");
            host.dir.write("etc/pve/qemu-server/101.conf", "cores: 4\n\n[PENDING]\nhostpci5: 0000:c1:00.0\n");
            const auto p = host.plan(vm_request(101));
            REQUIRE(p);
            CHECK_FALSE(p->refused());
        }
        SUBCASE("the same mapping on another node does not count")
        {
            VmHost host("epyc-4x2080ti");
            host.dir.write("etc/pve/qemu-server/101.conf", "cores: 4\n");
            host.dir.write("etc/pve/qemu-server/250.conf", "hostpci0: mapping=train,pcie=1\nmachine: q35\n");
            host.dir.write("etc/pve/mapping/pci.cfg", "train\n\tmap id=10de:1e07,node=other,path=0000:81:00\n\n");
            const auto p = host.plan(vm_request(101));
            REQUIRE(p);
            CHECK_FALSE(p->refused());
        }
        SUBCASE("VMID")
        {
            VmHost host("epyc-4x2080ti");
            const auto p = host.plan(vm_request(99));
            REQUIRE(p);
            CHECK(refused_with(*p, "outside 100-999999999"));
        }
    }

    TEST_CASE("a VM that does not exist is created by one qm create")
    {
        VmHost host("epyc-4x2080ti");
        host.dir.write("etc/pve/storage.cfg", "lvmthin: local-lvm\n\tthinpool data\n\tvgname pve\n\tcontent rootdir,images\n");
        const auto p = host.plan(vm_request(130, "0000:01:00"));
        REQUIRE(p);
        const auto it = std::find_if(p->commands.begin(), p->commands.end(),
                                     [](const plan::PlannedCommand& c) { return c.argv.size() > 2 && c.argv[1] == "create"; });
        REQUIRE(it != p->commands.end());
        const auto& argv = it->argv;
        const auto has = [&](const std::string& key, const std::string& value) {
            const auto k = std::find(argv.begin(), argv.end(), key);
            return k != argv.end() && k + 1 != argv.end() && *(k + 1) == value;
        };
        CHECK(has("--hostpci0", "0000:01:00,pcie=1"));
        CHECK(has("--machine", "q35"));
        CHECK(has("--bios", "ovmf"));
        CHECK(has("--efidisk0", "local-lvm:1,efitype=4m,pre-enrolled-keys=0"));
        CHECK(has("--numa", "1"));
        CHECK(has("--balloon", "0"));
        CHECK(change_of(*p, "/etc/pve/qemu-server/130.conf") == nullptr);
    }
}

TEST_SUITE("plan::vm_libvirt")
{
    TEST_CASE("define, plan, apply and restore a domain on test:///default")
    {
        // One process shares one test:///default connection, so the domain
        // defined here is what the planner reads and the apply functions change.
        const std::string uri = "test:///default";
        const std::string xml = "<domain type='test'>\n  <name>gpu-unit</name>\n  <memory unit='KiB'>1048576</memory>\n"
                                "  <vcpu>2</vcpu>\n  <os>\n    <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>\n  </os>\n"
                                "  <devices>\n    <controller type='pci' index='0' model='pcie-root'/>\n  </devices>\n</domain>\n";
        REQUIRE(apply::define_domain_xml(uri, xml));

        VmHost host("epyc-4x2080ti");
        plan::Request req;
        req.vm = "gpu-unit";
        req.gpus = "0000:01:00,0000:41:00";
        req.backend = plan::Backend::libvirt;
        req.connect_uri = uri;
        const auto p = host.plan(req);
        REQUIRE(p);
        REQUIRE_FALSE(p->refused());
        REQUIRE(p->domains.size() == 1);
        const auto& change = p->domains.front();
        CHECK(change.uri == uri);
        REQUIRE(change.before_xml);

        REQUIRE(apply::define_domain_xml(uri, change.after_xml));
        const auto now = scan::read_domain_xml(uri, "gpu-unit");
        REQUIRE(now);
        REQUIRE(*now);
        const std::string& defined = (*now)->xml;
        std::size_t hostdevs = 0;
        for (std::size_t pos = defined.find("<hostdev "); pos != std::string::npos; pos = defined.find("<hostdev ", pos + 1)) {
            ++hostdevs;
        }
        CHECK(hostdevs == 8); // 2 cards x 4 functions (Turing: VGA, audio, USB, UCSI)
        CHECK(defined.find("<address domain='0x0000' bus='0x41' slot='0x00' function='0x3'/>") != std::string::npos);
        CHECK(defined.find("multifunction='on'") != std::string::npos);

        // Planning again: nothing to do.
        const auto again = host.plan(req);
        REQUIRE(again);
        CHECK(again->domains.empty());

        // restore_domain puts the old definition back...
        REQUIRE(apply::restore_domain(change));
        const auto restored = scan::read_domain_xml(uri, "gpu-unit");
        REQUIRE(restored);
        REQUIRE(*restored);
        CHECK((*restored)->xml.find("<hostdev") == std::string::npos);
        // ...and undefines a domain that did not exist before.
        plan::DomainChange created = change;
        created.before_xml.reset();
        REQUIRE(apply::restore_domain(created));
        const auto gone = scan::read_domain_xml(uri, "gpu-unit");
        REQUIRE(gone);
        CHECK_FALSE(*gone);
    }

    TEST_CASE("a domain whose guest cannot map the RTX 5090's 32 GiB BAR gets host-passthrough with maxphysaddr passthrough")
    {
        // No <cpu>: QEMU's qemu64 with 40 bits and no pdpe1gb; OVMF does not trust 40 bits from Intel, so it
        // opens its classic 32 GiB window, too small for the card (32 GiB + 32 MiB behind one root port: 64 GiB).
        // The host's Core i9-14900K has 46 bits.
        const std::string uri = "test:///default";
        const std::string xml = "<domain type='test'>\n  <name>gpu-bar</name>\n  <memory unit='GiB'>16</memory>\n"
                                "  <vcpu>2</vcpu>\n  <os>\n    <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>\n  </os>\n"
                                "  <devices>\n    <controller type='pci' index='0' model='pcie-root'/>\n  </devices>\n</domain>\n";
        REQUIRE(apply::define_domain_xml(uri, xml));
        VmHost host("blackwell-5090");
        plan::Request req;
        req.vm = "gpu-bar";
        req.gpus = "all";
        req.backend = plan::Backend::libvirt;
        req.connect_uri = uri;
        const auto p = host.plan(req);
        REQUIRE(p);
        REQUIRE_FALSE(p->refused());
        REQUIRE(p->domains.size() == 1);
        const auto& change = p->domains.front();
        CHECK(change.after_xml.find(
                  "<cpu mode='host-passthrough' check='none' migratable='on'>\n    <maxphysaddr mode='passthrough'/>\n  </cpu>")
              != std::string::npos);
        const bool explained = std::any_of(change.reasons.begin(), change.reasons.end(), [](const std::string& r) {
            return r.starts_with(
                       "<cpu mode='host-passthrough'> with <maxphysaddr mode='passthrough'/>: the GPUs' 64-bit BARs (0000:01:00: "
                       "32 GiB + 32 MiB = 32800 MiB, rounded up to a multiple of its largest BAR = 64 GiB) need 64 GiB, but cpu "
                       "qemu64 without phys-bits (QEMU's default of 40 bits) gives the guest 40 address bits and OVMF a 32 GiB window")
                   && r.find("the host CPU's 46 bits give a 8192 GiB window") != std::string::npos;
        });
        CHECK(explained);
        REQUIRE(apply::define_domain_xml(uri, change.after_xml)); // the test driver parses what the plan wrote
        const auto again = host.plan(req);
        REQUIRE(again);
        CHECK(again->domains.empty());
        const bool fits = std::any_of(again->notes.begin(), again->notes.end(), [](const std::string& n) {
            return n.find("libvirt domain 'gpu-bar': the GPUs' 64-bit BARs (0000:01:00: 32 GiB") == 0 && n.ends_with(": they fit");
        });
        CHECK(fits);
        plan::DomainChange created = change;
        created.before_xml.reset();
        REQUIRE(apply::restore_domain(created));
    }

    TEST_CASE("libvirt errors come back as Error, not on stderr")
    {
        test::TempDir dir;
        CapturedStderr stderr_file(dir.path() / "stderr");
        const auto bad = apply::define_domain_xml("test:///default", "<domain><name>broken");
        const auto conn = scan::read_domain_xml("test:///nonexistent/node.xml", "x");
        const std::string printed = stderr_file.text();
        REQUIRE_FALSE(bad);
        CHECK(bad.error().code() == Errc::io);
        CHECK(std::string(bad.error().what()).find("libvirt refused") != std::string::npos);
        REQUIRE_FALSE(conn);
        CHECK(std::string(conn.error().what()).find("cannot connect to libvirt at test:///nonexistent/node.xml") != std::string::npos);
        CHECK(printed.empty());
    }
}
