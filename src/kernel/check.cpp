// SPDX-License-Identifier: GPL-2.0-or-later
#include "kernel/check.hpp"

#include <algorithm>
#include <libkmod.h>
#include <memory>
#include <set>

#include "data/host_drivers.hpp"
#include "kernel/initramfs.hpp"
#include "plan/host/drivers.hpp"
#include "plan/paths.hpp"
#include "scan/boot_loader.hpp"
#include "scan/kmod_ctx.hpp"
#include "util/strings.hpp"

namespace passthru::kernel {

namespace {

// The vfio modules every passthrough needs; vfio_virqfd is part of vfio on newer kernels
// and only checked when /etc/initramfs-tools/modules lists it.
constexpr std::string_view k_vfio_modules[] = {"vfio", "vfio_iommu_type1", "vfio_pci"};
constexpr std::string_view k_dkms_dir = "/var/lib/dkms";

// What libkmod says of a module in one kernel's tree.
struct ModuleLookup
{
    bool found = false;
    bool builtin = false;
    std::string path; // relative to the tree ("kernel/drivers/vfio/pci/vfio-pci.ko")
};

// One kernel's module tree, asked through libkmod with no configuration files: only the
// tree counts, never this machine's /etc/modprobe.d.
class ModuleTree
{
public:
    ModuleTree(const util::HostFs& fs, const std::string& release)
    {
        const std::string dir = "/lib/modules/" + release;
        if (!fs.is_dir(dir) || (!fs.exists(dir + "/modules.dep.bin") && !fs.exists(dir + "/modules.dep"))) {
            return;
        }
        auto local = fs.local(dir);
        if (!local) {
            return;
        }
        m_dir = local->string();
        const char* no_config[] = {nullptr};
        m_ctx = scan::new_quiet_kmod_ctx(m_dir.c_str(), no_config);
    }
    ~ModuleTree()
    {
        if (m_ctx != nullptr) {
            kmod_unref(m_ctx);
        }
    }
    ModuleTree(const ModuleTree&) = delete;
    ModuleTree& operator=(const ModuleTree&) = delete;

    bool usable() const { return m_ctx != nullptr; }

    ModuleLookup lookup(std::string_view name) const
    {
        ModuleLookup out;
        if (m_ctx == nullptr) {
            return out;
        }
        const std::string wanted = util::module_key(name);
        kmod_list* list = nullptr;
        if (kmod_module_new_from_lookup(m_ctx, wanted.c_str(), &list) < 0) {
            return out;
        }
        kmod_list* it = nullptr;
        kmod_list_foreach(it, list)
        {
            kmod_module* mod = kmod_module_get_module(it);
            if (!out.found && util::module_key(kmod_module_get_name(mod)) == wanted) {
                out.found = true;
                const char* path = kmod_module_get_path(mod);
                if (path == nullptr) {
                    out.builtin = true;
                } else {
                    std::string_view p(path);
                    if (p.starts_with(m_dir + "/")) {
                        p.remove_prefix(m_dir.size() + 1);
                    }
                    out.path = std::string(p);
                }
            }
            kmod_module_unref(mod);
        }
        kmod_module_unref_list(list);
        return out;
    }

private:
    std::string m_dir;
    kmod_ctx* m_ctx = nullptr;
};

// The words of a modprobe.d file that matter here: which modules it softdeps and blacklists.
struct ModprobeWords
{
    std::set<std::string> softdeps;   // "softdep MODULE pre: ..."
    std::set<std::string> blacklists; // "blacklist MODULE", "install MODULE /bin/false"
};

ModprobeWords modprobe_words(std::string_view text)
{
    ModprobeWords out;
    for (const auto& line : util::split_lines(text)) {
        const auto words = util::split(util::trim(line), " \t");
        if (words.size() < 2 || words[0].starts_with('#')) {
            continue;
        }
        if (words[0] == "softdep") {
            out.softdeps.insert(util::module_key(words[1]));
        } else if (words[0] == "blacklist"
                   || (words[0] == "install" && words.size() == 3 && (words[2] == "/bin/false" || words[2] == "/bin/true"))) {
            out.blacklists.insert(util::module_key(words[1]));
        }
    }
    return out;
}

// The module names /etc/initramfs-tools/modules lists (first word of each line).
std::vector<std::string> initramfs_module_list(const util::HostFs& fs)
{
    std::vector<std::string> out;
    const auto text = fs.read_file(plan::k_initramfs_modules);
    if (!text) {
        return out;
    }
    for (const auto& line : util::split_lines(*text)) {
        const auto words = util::split(util::trim(line), " \t");
        if (!words.empty() && !words[0].starts_with('#')) {
            out.push_back(util::module_key(words[0]));
        }
    }
    return out;
}

std::string update_initramfs(const std::string& release)
{
    return "run 'update-initramfs -u -k " + release + "'";
}

// The host's passthru modprobe.d file and the vfio modules in the kernel's initramfs.
void check_initramfs(const util::HostFs& fs, const ModuleTree& tree, const std::string& release, const std::optional<std::string>& conf,
                     KernelVerdict& v)
{
    const std::string image = "/boot/initrd.img-" + release;
    if (!fs.exists(image)) {
        v.problems.push_back({"initramfs", "it has no initramfs (" + image + ")", "run 'update-initramfs -c -k " + release + "'"});
        return;
    }
    const std::string conf_member = std::string(plan::k_modprobe_conf.substr(1));
    const auto bytes = fs.read_file(image);
    if (!bytes) {
        v.problems.push_back(
            {"initramfs", "its initramfs cannot be read: " + std::string(bytes.error().what()), update_initramfs(release)});
        return;
    }
    const auto contents = read_initramfs(*bytes, {conf_member}, image);
    if (!contents) {
        v.problems.push_back({"initramfs", contents.error().what(), update_initramfs(release)});
        return;
    }
    if (conf) {
        const auto held = contents->files.find(conf_member);
        if (held == contents->files.end()) {
            v.problems.push_back(
                {"initramfs",
                 "its initramfs lacks " + std::string(plan::k_modprobe_conf) + ", so a host driver can claim the cards before vfio-pci",
                 update_initramfs(release)});
        } else if (held->second != *conf) {
            v.problems.push_back({"initramfs", "its initramfs holds an older " + std::string(plan::k_modprobe_conf) + " than the host's",
                                  update_initramfs(release)});
        }
    }
    // The vfio modules the initramfs module list asks for must be in the image.
    const auto listed = initramfs_module_list(fs);
    for (const auto& name : listed) {
        if (!name.starts_with("vfio")) {
            continue;
        }
        const auto found = tree.lookup(name);
        if (!found.found || found.builtin) {
            continue; // a module the tree lacks is reported by check_modules; a built-in one needs no file
        }
        // Debian 12's mkinitramfs unpacks the .ko.xz / .ko.zst it copies (docs/facts.md:
        // kernel-hooks), so the image may hold the module under its plain .ko name.
        const std::string rel = "lib/modules/" + release + "/" + found.path;
        const auto in_image = [&](const std::string& path) {
            return contents->paths.count(path) != 0 || contents->paths.count("usr/" + path) != 0;
        };
        bool held = in_image(rel);
        for (const std::string_view ext : {".xz", ".zst", ".gz"}) {
            if (!held && rel.ends_with(ext)) {
                held = in_image(rel.substr(0, rel.size() - ext.size()));
            }
        }
        if (!held) {
            v.problems.push_back(
                {"initramfs",
                 "its initramfs lacks " + name + " (" + found.path + "), which " + std::string(plan::k_initramfs_modules) + " lists",
                 update_initramfs(release)});
        }
    }
}

void check_modules(const ModuleTree& tree, const ModuleTree* running, const ModprobeWords& words,
                   const std::vector<std::string>& initramfs_list, const std::string& release, KernelVerdict& v)
{
    std::vector<std::string> vfio(std::begin(k_vfio_modules), std::end(k_vfio_modules));
    for (const auto& name : initramfs_list) {
        if (name.starts_with("vfio") && std::find(vfio.begin(), vfio.end(), name) == vfio.end()) {
            vfio.push_back(name);
        }
    }
    for (const auto& name : vfio) {
        if (name == "vfio_virqfd" && !tree.lookup(name).found && tree.lookup("vfio").found) {
            // folded into vfio (Linux 6.2, docs/facts.md: modules): passthrough works, the line fails
            v.notes.push_back(std::string(plan::k_initramfs_modules)
                              + " lists vfio_virqfd, which this kernel has inside vfio: systemd-modules-load reports it missing; "
                                "'passthru apply' again leaves it out");
            continue;
        }
        if (!tree.lookup(name).found) {
            v.problems.push_back({"modules", "its module tree has no " + name + " (asked through libkmod)",
                                  "install the kernel's full module package, or run 'depmod " + release + "'"});
        }
    }
    // A softdepped driver the running kernel has and this one lacks: a card of that driver
    // kept on the host would have none (a missing DKMS build is reported as such).
    for (const auto& name : words.softdeps) {
        if (running != nullptr && running->lookup(name).found && !tree.lookup(name).found) {
            v.notes.push_back("passthru's modprobe.d softdeps " + name
                              + ", which the running kernel has and this one's module tree does not");
        }
    }
}

// A driver of profiles/host/drivers.json that this kernel has, that claims a passed function,
// and that passthru's modprobe.d neither softdeps nor blacklists.
void check_drivers(const ModuleTree& tree, const scan::Inventory& inventory, const data::HostDriverData& drivers,
                   const ModprobeWords& words, const std::vector<scan::PciAddress>& functions, KernelVerdict& v)
{
    for (const auto& driver : drivers.drivers) {
        if (!driver.claims_something || (driver.vgpu_keep && inventory.host.vgpu_host())) {
            continue;
        }
        const std::string key = util::module_key(driver.module);
        if (words.softdeps.count(key) != 0 || words.blacklists.count(key) != 0) {
            continue;
        }
        std::vector<std::string> claimed;
        for (const auto& addr : functions) {
            const auto* dev = inventory.find(addr);
            if (dev != nullptr && plan::detail::driver_claims(driver, *dev)) {
                claimed.push_back(addr.str());
            }
        }
        if (claimed.empty() || !tree.lookup(driver.module).found) {
            continue;
        }
        v.problems.push_back({"driver",
                              driver.module + " in this kernel would claim " + util::join(claimed, ", ")
                                  + " before vfio-pci: passthru's modprobe.d neither softdeps nor blacklists it",
                              "add 'softdep " + driver.module + " pre: vfio-pci' to " + std::string(plan::k_modprobe_conf)
                                  + " (or boot the kernel and run 'passthru plan' and 'apply' again), then "
                                  + update_initramfs(v.release)});
    }
}

// DKMS keeps each build under /var/lib/dkms/<module>/<version>/<kver>/<arch>/module/
// (docs/facts.md: dkms). A module built for the running kernel (or, when that is unknown,
// for any kernel) is one the host relies on.
struct DkmsModule
{
    std::string name;
    std::string version;
    std::set<std::string> kernels; // releases it is built for
    std::set<std::string> ko;      // its module names ("vendor_reset")
};

bool dkms_release_word(const std::string& word)
{
    return !word.empty() && word != "source" && word != "build" && word != "original_module" && !word.starts_with("kernel-")
           && !word.starts_with('.');
}

std::vector<DkmsModule> dkms_modules(const util::HostFs& fs)
{
    std::vector<DkmsModule> out;
    const auto names = fs.list_dir(k_dkms_dir);
    if (!names) {
        return out;
    }
    for (const auto& name : *names) {
        const std::string mdir = std::string(k_dkms_dir) + "/" + name;
        if (name.starts_with('.') || !fs.is_dir(mdir)) {
            continue;
        }
        const auto versions = fs.list_dir(mdir);
        for (const auto& version : versions ? *versions : std::vector<std::string>{}) {
            const std::string vdir = mdir + "/" + version;
            if (!dkms_release_word(version) || !fs.is_dir(vdir)) {
                continue;
            }
            DkmsModule m{name, version, {}, {}};
            const auto kernels = fs.list_dir(vdir);
            for (const auto& kver : kernels ? *kernels : std::vector<std::string>{}) {
                if (!dkms_release_word(kver) || !fs.is_dir(vdir + "/" + kver)) {
                    continue;
                }
                const auto arches = fs.list_dir(vdir + "/" + kver);
                for (const auto& arch : arches ? *arches : std::vector<std::string>{}) {
                    const std::string built = vdir + "/" + kver + "/" + arch + "/module";
                    const auto kos = fs.list_dir(built);
                    if (!kos) {
                        continue;
                    }
                    m.kernels.insert(kver);
                    for (const auto& ko : *kos) {
                        const auto dot = ko.find(".ko");
                        if (dot != std::string::npos && dot > 0) {
                            m.ko.insert(util::module_key(ko.substr(0, dot)));
                        }
                    }
                }
            }
            if (!m.kernels.empty()) {
                out.push_back(std::move(m));
            }
        }
    }
    return out;
}

// dkms install copies a built module to /lib/modules/<kver>/updates/dkms/ (docs/facts.md: dkms)
// and runs depmod; either is evidence that it is installed.
bool dkms_installed(const util::HostFs& fs, const ModuleTree& tree, const std::string& release, const std::string& ko)
{
    if (tree.lookup(ko).found) {
        return true;
    }
    const std::string dir = "/lib/modules/" + release + "/updates/dkms/";
    std::string dashed = ko;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    for (const auto& name : {ko, dashed}) {
        for (const char* ext : {".ko", ".ko.xz", ".ko.zst", ".ko.gz"}) {
            if (fs.exists(dir + name + ext)) {
                return true;
            }
        }
    }
    return false;
}

void check_dkms(const util::HostFs& fs, const ModuleTree& tree, const std::vector<DkmsModule>& modules,
                const std::optional<std::string>& running, KernelVerdict& v)
{
    std::set<std::string> reported;
    for (const auto& m : modules) {
        const bool relied = !running || m.kernels.count(*running) != 0;
        if (!relied || m.kernels.count(v.release) != 0) {
            continue;
        }
        // Another version of the same module may be built for this kernel.
        const bool other = std::any_of(modules.begin(), modules.end(),
                                       [&](const DkmsModule& o) { return o.name == m.name && o.kernels.count(v.release) != 0; });
        if (other || !reported.insert(m.name).second) {
            continue;
        }
        v.problems.push_back({"dkms",
                              "the DKMS module " + m.name + " " + m.version + " is not built for it (" + std::string(k_dkms_dir) + "/"
                                  + m.name + "/" + m.version + " has no " + v.release + ")",
                              "install its headers and run 'dkms autoinstall -k " + v.release + "'; a failed build leaves "
                                  + std::string(k_dkms_dir) + "/" + m.name + "/" + m.version + "/build/make.log"});
    }
    for (const auto& m : modules) {
        if (m.kernels.count(v.release) == 0) {
            continue;
        }
        for (const auto& ko : m.ko) {
            if (!dkms_installed(fs, tree, v.release, ko)) {
                v.problems.push_back({"dkms",
                                      "the DKMS module " + m.name + " " + m.version
                                          + " is built for it, but not installed: neither its module tree nor /lib/modules/" + v.release
                                          + "/updates/dkms has " + ko,
                                      "run 'dkms install " + m.name + "/" + m.version + " -k " + v.release + "'"});
            }
        }
    }
}

void check_regressions(const scan::Inventory& inventory, const CheckInputs& inputs, KernelVerdict& v)
{
    for (const auto& r : inputs.regressions.rows) {
        if (!r.covers(v.release)) {
            continue;
        }
        if (r.vendor) {
            const bool passes_vendor = std::any_of(inputs.functions.begin(), inputs.functions.end(), [&](const scan::PciAddress& a) {
                const auto* dev = inventory.find(a);
                return dev != nullptr && dev->vendor == r.vendor;
            });
            if (!passes_vendor) {
                continue;
            }
        }
        const std::string range = r.from_text + (r.fixed ? " up to before " + r.fixed_text : " on");
        v.problems.push_back(
            {"regression", "known regression (" + range + "): " + r.symptom + " [" + util::join(r.sources, "; ") + "]", r.fix});
    }
}

} // namespace

Result<std::vector<KernelVerdict>> check_kernels(const util::HostFs& fs, const scan::Inventory& inventory, const data::DataDir& data,
                                                 const CheckInputs& inputs, const std::vector<std::string>& releases)
{
    auto drivers = data::load_host_drivers(data);
    if (!drivers) {
        return tl::unexpected(drivers.error());
    }
    std::optional<std::string> conf;
    if (auto text = fs.read_file(plan::k_modprobe_conf)) {
        conf = std::move(*text);
    }
    const ModprobeWords words = modprobe_words(conf.value_or(""));
    const auto initramfs_list = initramfs_module_list(fs);
    const auto dkms = dkms_modules(fs);
    std::vector<KernelVerdict> out;
    std::unique_ptr<ModuleTree> running_tree;
    for (const auto& release : releases) {
        KernelVerdict v;
        v.release = release;
        v.running = inventory.host.kernel && *inventory.host.kernel == release;
        const ModuleTree tree(fs, release);
        if (!running_tree && inventory.host.kernel && scan::check_release_word(fs, *inventory.host.kernel)) {
            running_tree = std::make_unique<ModuleTree>(fs, *inventory.host.kernel);
        }
        if (!tree.usable()) {
            v.problems.push_back(
                {"modules", "its module tree /lib/modules/" + release + " has no index libkmod can read", "run 'depmod " + release + "'"});
        } else {
            check_modules(tree, running_tree.get(), words, initramfs_list, release, v);
        }
        if (!conf) {
            v.notes.push_back("passthru has not configured this host (no " + std::string(plan::k_modprobe_conf)
                              + "): only its module tree, DKMS and the known regressions were checked");
        }
        check_initramfs(fs, tree, release, conf, v);
        if (inputs.functions.empty()) {
            v.notes.push_back("no applied generation says which cards pass: the host drivers of new kernels were not checked");
        } else if (tree.usable() && conf) {
            check_drivers(tree, inventory, *drivers, words, inputs.functions, v);
        }
        check_dkms(fs, tree, dkms, inventory.host.kernel, v);
        check_regressions(inventory, inputs, v);
        out.push_back(std::move(v));
    }
    return out;
}

} // namespace passthru::kernel
