// SPDX-License-Identifier: GPL-2.0-or-later
// The host's modprobe.d configuration through libkmod. passthru picks the
// files the way kmod does (docs/facts.md: modprobe-config): every directory of
// k_modprobe_dirs, names ending in .conf or .alias that are not hidden and not
// directories, the first directory holding a name wins, files in name order.
// It picks them itself rather than handing kmod the directories because a file
// may be a symlink, which kmod would sort and shadow by the target's name.
// libkmod never opens a file under the root: passthru reads each one through
// HostFs (confined to the root, whatever the tree's owner swaps meanwhile)
// and hands libkmod that text in a memory file of its own (util::PrivateTextFile). Each
// file is parsed by its own libkmod context, which also says which file a
// directive came from; the effective configuration is the files' directives
// in order, as one context over the same list would hold them.
//
// libkmod also reads this machine's /proc/cmdline into every context
// (modprobe.blacklist= as blacklists, module.param= as options), after the
// files. That tail is the same in a context given no file at all, and is
// removed, so the answer depends on the root only.
#include "plan/host/modprobe_config.hpp"

#include <libkmod.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "scan/kmod_ctx.hpp"
#include "util/error.hpp"
#include "util/local_file.hpp"

namespace passthru::plan::detail {

namespace {

struct CtxFree
{
    void operator()(kmod_ctx* c) const { kmod_unref(c); }
};
using Ctx = std::unique_ptr<kmod_ctx, CtxFree>;

// The one table of what a context is asked for.
struct KindReader
{
    ModprobeKind kind;
    kmod_config_iter* (*iter)(const kmod_ctx*);
};
constexpr std::array<KindReader, 5> k_readers{{
    {ModprobeKind::blacklist, kmod_config_get_blacklists},
    {ModprobeKind::options, kmod_config_get_options},
    {ModprobeKind::install, kmod_config_get_install_commands},
    {ModprobeKind::softdep, kmod_config_get_softdeps},
    {ModprobeKind::alias, kmod_config_get_aliases},
}};

bool same(const ModprobeDirective& a, const ModprobeDirective& b)
{
    return a.kind == b.kind && a.module == b.module && a.value == b.value;
}

// A context over the given local files (none: only what libkmod adds on its
// own). Its module directory is the first file itself, so the
// <dir>/modules.softdep that kmod_config_new always tries cannot be opened.
Ctx open_ctx(const std::string& dirname, const std::vector<std::string>& files)
{
    std::vector<const char*> paths;
    paths.reserve(files.size() + 1);
    for (const auto& f : files) {
        paths.push_back(f.c_str());
    }
    paths.push_back(nullptr);
    Ctx ctx(scan::new_quiet_kmod_ctx(dirname.c_str(), paths.data()));
    if (!ctx) {
        throw Error(Errc::io, "libkmod could not read " + dirname);
    }
    return ctx;
}

std::vector<ModprobeDirective> directives_of(const kmod_ctx* ctx, ModprobeKind kind, kmod_config_iter* (*get)(const kmod_ctx*))
{
    std::vector<ModprobeDirective> out;
    kmod_config_iter* it = get(ctx);
    if (it == nullptr) {
        return out;
    }
    while (kmod_config_iter_next(it)) {
        const char* key = kmod_config_iter_get_key(it);
        const char* value = kmod_config_iter_get_value(it);
        out.push_back({kind, key != nullptr ? key : "", value != nullptr ? value : ""});
    }
    kmod_config_iter_free_iter(it);
    return out;
}

// What libkmod reads from one local file, without its /proc/cmdline tail.
std::vector<ModprobeDirective> parse_file(const std::string& local)
{
    const Ctx with_file = open_ctx(local, {local});
    const Ctx cmdline_only = open_ctx(local, {});
    std::vector<ModprobeDirective> out;
    for (const auto& r : k_readers) {
        auto all = directives_of(with_file.get(), r.kind, r.iter);
        const auto tail = directives_of(cmdline_only.get(), r.kind, r.iter);
        if (tail.size() > all.size() || !std::equal(tail.begin(), tail.end(), all.end() - static_cast<long>(tail.size()), same)) {
            throw Error(Errc::internal, "libkmod's reading of " + local + " does not end with the kernel command line's entries");
        }
        all.resize(all.size() - tail.size());
        out.insert(out.end(), all.begin(), all.end());
    }
    return out;
}

// kmod's test for a directory entry (libkmod-config.c, conf_files_filter_out).
bool kmod_reads(const util::HostFs& fs, const std::string& dir, const std::string& name)
{
    if (name.empty() || name.front() == '.') {
        return false;
    }
    if (!name.ends_with(".conf") && !name.ends_with(".alias")) {
        return false;
    }
    return !fs.is_dir(dir + "/" + name);
}

// name -> host path, the first directory holding a name winning.
std::map<std::string, std::string> effective_files(const util::HostFs& fs)
{
    std::map<std::string, std::string> files;
    for (const auto dir_view : k_modprobe_dirs) {
        const std::string dir(dir_view);
        auto names = fs.list_dir(dir);
        if (!names) {
            continue;
        }
        for (const auto& name : *names) {
            if (kmod_reads(fs, dir, name)) {
                files.emplace(name, dir + "/" + name);
            }
        }
    }
    return files;
}

} // namespace

std::vector<ModprobeFile> read_modprobe_config(const util::HostFs& fs)
{
    std::vector<ModprobeFile> out;
    const auto files = effective_files(fs);
    std::optional<util::PrivateTextFile> input;
    for (const auto& [name, path] : files) {
        ModprobeFile file{path, {}};
        // Read through HostFs, confined to the root (symlinks resolved
        // inside it by the kernel, never by name): what libkmod parses is
        // this text, never a file it opens under the root. A name that
        // leads to no readable file (a mask such as a link to /dev/null,
        // which is no file under a --root tree and reads empty on a host, or
        // a dangling link) still shadows later directories and says nothing.
        if (auto text = fs.read_file(path); text && !text->empty()) {
            if (!input) {
                input.emplace("passthru-modprobe.conf");
            }
            file.directives = parse_file(input->put(*text));
        }
        out.push_back(std::move(file));
    }
    return out;
}

} // namespace passthru::plan::detail
