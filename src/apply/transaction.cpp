// SPDX-License-Identifier: GPL-2.0-or-later
// run_transaction and its steps (apply/transaction.hpp): preflight, write-ahead,
// the files and domains, the after-steps (run in apply/transaction_after_steps.cpp),
// the commit, and the restore of a failed transaction (apply/transaction_restore.cpp).
#include "apply/transaction.hpp"

#include <algorithm>
#include <set>

#include "apply/transaction_detail.hpp"
#include "scan/libvirt_domain.hpp"
#include "util/fault.hpp"
#include "util/sha256.hpp"
#include "util/signals.hpp"
#include "util/strings.hpp"
#include "util/temp_name.hpp"

namespace passthru::apply {

namespace detail {

void check(Result<void> r)
{
    if (!r) {
        throw r.error();
    }
}

void check_signal(GenerationKind kind)
{
    const int sig = util::received_signal();
    if (sig != 0 && kind == GenerationKind::apply) {
        throw Error(Errc::io, "interrupted by " + util::signal_name(sig));
    }
}

void emit(const Progress& progress, std::string_view text)
{
    if (progress.step) {
        progress.step(text);
    }
}

// Where a host path is on this machine, for the hand-made repair commands.
std::string shown(const util::HostFs& fs, std::string_view host_path)
{
    if (fs.is_live()) {
        return std::string(host_path);
    }
    return (fs.root() / std::string(host_path).substr(1)).string();
}

std::string type_name(util::FileType type)
{
    switch (type) {
    case util::FileType::missing:
        return "missing";
    case util::FileType::regular:
        return "a regular file";
    case util::FileType::directory:
        return "a directory";
    case util::FileType::symlink:
        return "a symbolic link";
    case util::FileType::other:
        return "a special file";
    }
    return "unknown";
}

} // namespace detail

namespace {

using detail::check;
using detail::check_signal;
using detail::emit;
using detail::record_after_state;
using detail::remove_temp_files;
using detail::run_after_step;
using detail::shown;
using detail::type_name;

struct CurrentFile
{
    util::FileInfo info;
    std::optional<std::string> content; // regular files only
};

CurrentFile read_current(const util::HostFs& fs, const std::string& path)
{
    CurrentFile cur;
    cur.info = fs.stat(path);
    if (cur.info.type == util::FileType::regular) {
        auto text = fs.read_file(path);
        if (!text) {
            throw text.error();
        }
        cur.content = std::move(*text);
    }
    return cur;
}

Error replan_error(const std::string& message)
{
    return Error(Errc::conflict, message)
        .with_hint("the host changed since the plan was made; run 'passthru plan' again and review the new plan");
}

} // namespace

namespace detail {

// Removes the temporary files HostFs::write_file_atomic may have left next
// to `path` (a kill -9 between writing one and renaming it onto `path`); their
// names follow from the journaled path (util/temp_name.hpp). One line per
// failure, for the report.
void remove_temp_files(const util::HostFs& fs, const std::string& path, std::vector<std::string>& failures)
{
    const std::string dir = util::dir_name(path);
    auto names = fs.list_dir(dir);
    if (!names) {
        return; // no directory, no temporary file
    }
    const std::string base(util::base_name(path));
    for (const auto& name : *names) {
        const std::string tmp = (dir == "/" ? "" : dir) + "/" + name;
        if (!util::is_temp_name(name, base) || fs.stat(tmp).type != util::FileType::regular) {
            continue;
        }
        if (auto r = fs.remove_file(tmp); !r) {
            failures.push_back(tmp + ": " + r.error().what() + "; a temporary file of an interrupted write: rm " + tmp);
        }
    }
}

} // namespace detail

TransactionSpec spec_from_plan(const plan::Plan& plan)
{
    TransactionSpec spec;
    spec.kind = GenerationKind::apply;
    spec.request = plan.request;
    spec.kernel_args = plan.kernel_args.add;
    spec.gpus = plan.gpus;
    for (const auto& fc : plan.files) {
        Change c;
        c.path = fc.path;
        c.action = fc.action;
        if (fc.before_sha256) {
            c.expected_before_sha256 = fc.before_sha256;
        } else if (fc.before) {
            c.expected_before_sha256 = util::sha256_hex(*fc.before);
        }
        c.after = fc.action == plan::FileAction::remove ? std::nullopt : fc.after;
        if (fc.action != plan::FileAction::remove && !c.after) {
            throw Error(Errc::internal, "the plan has no content for " + fc.path);
        }
        c.mode = fc.mode;
        spec.files.push_back(std::move(c));
    }
    spec.commands = plan.commands;
    spec.domains = plan.domains;
    return spec;
}

namespace {

Manifest new_manifest(const Journal& journal, const TransactionSpec& spec)
{
    Manifest m;
    m.id = journal.next_id();
    m.kind = spec.kind;
    m.state = GenerationState::pending;
    m.created = utc_now();
    m.request = spec.request;
    m.rollback_to_before = spec.rollback_to_before;
    m.gpus = spec.gpus;
    m.kernel_args = spec.kernel_args;
    m.undoes = spec.undoes;
    return m;
}

// Preflight of one planned file: it is still what the plan saw and a
// regular file (or missing). Returns what is there now and its journal entry.
std::pair<CurrentFile, JournalFile> preflight_file(const util::HostFs& fs, const Change& c)
{
    CurrentFile cur = read_current(fs, c.path);
    if (cur.info.type != util::FileType::regular && cur.info.type != util::FileType::missing) {
        throw Error(Errc::precondition, "refusing to change " + c.path + ": it is " + type_name(cur.info.type))
            .with_hint("passthru only replaces regular files; make " + c.path + " a regular file, or change it by hand");
    }
    const std::optional<std::string> sha = cur.content ? std::optional(util::sha256_hex(*cur.content)) : std::nullopt;
    if (c.expected_before_sha256 != sha) {
        if (!sha) {
            throw replan_error(c.path + " was removed since the plan was made");
        }
        if (!c.expected_before_sha256) {
            throw replan_error(c.path + " was created since the plan was made");
        }
        throw replan_error(c.path + " changed since the plan was made");
    }
    if (c.action == FileAction::create && sha) {
        throw replan_error(c.path + " exists, but the plan creates it");
    }
    if (c.action != FileAction::create && !sha) {
        throw replan_error(c.path + " does not exist, but the plan changes it");
    }
    JournalFile jf;
    jf.path = c.path;
    jf.action = c.action;
    jf.before_sha256 = sha;
    jf.after_sha256 = c.after ? std::optional(util::sha256_hex(*c.after)) : std::nullopt;
    jf.mode = sha ? cur.info.mode : c.mode;
    jf.uid = sha ? cur.info.uid : 0;
    jf.gid = sha ? cur.info.gid : 0;
    return {std::move(cur), std::move(jf)};
}

// Directories a created file needs, parents first, added to the manifest once.
void note_missing_dirs(const util::HostFs& fs, const Change& c, Manifest& m)
{
    if (c.action == FileAction::remove) {
        return;
    }
    std::vector<std::string> missing;
    for (std::string d = util::dir_name(c.path); d != "/"; d = util::dir_name(d)) {
        if (fs.is_dir(d)) {
            break;
        }
        if (fs.stat(d).type != util::FileType::missing) {
            throw Error(Errc::precondition, "cannot create " + c.path + ": " + d + " is not a directory");
        }
        missing.push_back(d);
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        if (std::find(m.created_dirs.begin(), m.created_dirs.end(), *it) == m.created_dirs.end()) {
            m.created_dirs.push_back(*it);
        }
    }
}

// Files an after-step edits that the plan does not write are journaled
// too (pre-image now, state after the steps later), so a rollback puts
// them back and sees no drift that passthru itself caused.
std::vector<std::pair<std::string, std::string>> journal_step_edits(const util::HostFs& fs, Manifest& m)
{
    std::vector<std::pair<std::string, std::string>> pre_images;
    for (const auto& cmd : m.commands) {
        for (const auto& path : cmd.edits) {
            if (std::any_of(m.files.begin(), m.files.end(), [&](const JournalFile& f) { return f.path == path; })) {
                continue;
            }
            CurrentFile cur = read_current(fs, path);
            if (!cur.content) {
                continue; // nothing to keep; the step itself will fail and say why
            }
            JournalFile jf;
            jf.path = path;
            jf.action = FileAction::modify;
            jf.before_sha256 = util::sha256_hex(*cur.content);
            jf.after_sha256 = jf.before_sha256;
            jf.mode = cur.info.mode;
            jf.uid = cur.info.uid;
            jf.gid = cur.info.gid;
            m.files.push_back(std::move(jf));
            pre_images.emplace_back(path, std::move(*cur.content));
        }
    }
    return pre_images;
}

// What preflight found: the manifest to be, and the pre-images to keep.
struct Prepared
{
    Manifest m;
    std::vector<CurrentFile> current;                                 // per spec.files
    std::vector<std::pair<std::string, std::string>> step_pre_images; // path, content
};

// 1. Preflight: nothing is written until every target is known to be safe.
Prepared preflight(const Journal& journal, const TransactionSpec& spec, const DomainHooks* domains)
{
    const util::HostFs& fs = journal.fs();
    if (!spec.domains.empty() && (domains == nullptr || !domains->define || !domains->restore)) {
        throw Error(Errc::precondition,
                    "this build cannot change libvirt domains, and the plan changes " + std::to_string(spec.domains.size()) + " of them");
    }
    for (const auto& d : spec.domains) {
        if (!fs.is_live() && !scan::is_in_process_uri(d.uri)) {
            throw Error(Errc::precondition, "refused: under --root passthru connects to no libvirt daemon, and " + d.uri + " is one")
                .with_hint("plan with --connect test:///PATH/node.xml (libvirt's test driver), or apply on the host itself");
        }
    }
    Prepared p{new_manifest(journal, spec), {}, {}};
    std::set<std::string> seen;
    for (const auto& c : spec.files) {
        if (c.path.empty() || c.path.front() != '/' || !seen.insert(c.path).second) {
            throw Error(Errc::internal, "bad or duplicate path in the plan: '" + c.path + "'");
        }
        auto [cur, jf] = preflight_file(fs, c);
        p.m.files.push_back(std::move(jf));
        note_missing_dirs(fs, c, p.m);
        p.current.push_back(std::move(cur));
    }
    for (const auto& cmd : spec.commands) {
        p.m.commands.push_back(journal_command(cmd.argv, cmd.reason));
    }
    p.step_pre_images = journal_step_edits(fs, p.m);
    for (const auto& d : spec.domains) {
        p.m.domains.push_back(JournalDomain{d.uri, d.name, d.before_xml.has_value(), util::sha256_hex(d.after_xml)});
    }
    return p;
}

// 2. Write-ahead: pre-images first, the manifest last. A generation
//    directory without a manifest means the host was never touched.
void write_ahead(const Journal& journal, const TransactionSpec& spec, const Prepared& p)
{
    try {
        for (std::size_t i = 0; i < spec.files.size(); ++i) {
            if (p.current[i].content) {
                check(journal.write_pre_image(p.m.id, spec.files[i].path, *p.current[i].content));
            }
        }
        for (const auto& [path, content] : p.step_pre_images) {
            check(journal.write_pre_image(p.m.id, path, content));
        }
        for (const auto& d : spec.domains) {
            if (d.before_xml) {
                check(journal.write_domain_pre_image(p.m.id, d.name, *d.before_xml));
            }
        }
        check(journal.save(p.m));
    } catch (const Error& e) {
        throw Error(Errc::io, std::string("cannot write the journal, so nothing was changed: ") + e.what())
            .with_hint("free space under " + shown(journal.fs(), k_state_dir) + " and try again");
    }
}

// 3. Files. Equivalent to: mkdir -p DIR; install -m MODE new PATH (atomically).
// 4. Domains (libvirt backend): virsh define, in effect.
void write_targets(const util::HostFs& fs, const TransactionSpec& spec, const Manifest& m, const Progress& progress,
                   const DomainHooks* domains, TransactionReport& report)
{
    for (const auto& d : m.created_dirs) {
        check(util::fault::check("mkdir", d));
        check(fs.create_directories(d));
        check(fs.sync_directory(util::dir_name(d)));
    }
    for (const auto& c : spec.files) {
        if (c.action == FileAction::remove) {
            emit(progress, "removing " + c.path);
            check(fs.remove_file(c.path));
        } else {
            emit(progress, "writing " + c.path);
            check(fs.write_file_atomic(c.path, *c.after, c.mode, util::FsSync::yes, c.exact));
        }
        report.written.push_back(c.path);
        check_signal(spec.kind);
    }
    for (const auto& d : spec.domains) {
        emit(progress, "defining libvirt domain " + d.name);
        check(util::fault::check("domain", d.name));
        check(domains->define(d.uri, d.after_xml));
    }
    std::vector<std::string> stray;
    for (const auto& c : spec.files) {
        remove_temp_files(fs, c.path, stray);
    }
    if (!stray.empty()) {
        throw Error(Errc::io, stray.front());
    }
    for (const auto& d : spec.remove_dirs) {
        if (fs.is_dir(d)) {
            auto entries = fs.list_dir(d);
            if (entries && entries->empty()) {
                check(fs.remove_directory(d));
            }
        }
    }
}

// 5. After-steps. The manifest says they started, so a recovery knows to
//    re-run them once the files are restored.
void run_after_steps(const Journal& journal, util::CommandRunner& runner, Manifest& m, const Progress& progress)
{
    if (!m.commands.empty()) {
        m.commands_started = true;
        check(journal.save(m));
    }
    util::CommandRunner::LineSink sink;
    if (progress.output) {
        sink = progress.output;
    }
    runner.set_line_sink(sink);
    for (std::size_t i = 0; i < m.commands.size(); ++i) {
        check_signal(m.kind);
        run_after_step(journal.fs(), runner, m.commands, i, progress);
    }
    runner.set_line_sink({});
}

// A step failed: restore the generation and say what happened; throws.
[[noreturn]] void undo_failed_transaction(const Journal& journal, util::CommandRunner& runner, Manifest& m, const Error& e,
                                          const Progress& progress, const DomainHooks* domains)
{
    runner.set_line_sink({});
    m.state = GenerationState::pending;
    m.error = e.what();
    emit(progress, std::string("failed: ") + e.what());
    emit(progress, "restoring the files from generation " + std::to_string(m.id));
    RestoreReport restore = restore_generation(journal, runner, m, progress, domains);
    if (!restore.failures.empty()) {
        throw rollback_failed_error(m.id, e.what(), restore);
    }
    Error out(Errc::io, e.what());
    for (const auto& h : e.hints()) {
        out.with_hint(h);
    }
    out.with_hint("nothing was left changed: " + std::to_string(restore.restored.size()) + " file(s) were restored from generation "
                  + std::to_string(m.id) + " (now marked rolled-back)");
    for (const auto& n : restore.not_undone) {
        out.with_hint("not undone automatically: " + n);
    }
    throw out;
}

} // namespace

TransactionReport run_transaction(const Journal& journal, util::CommandRunner& runner, const TransactionSpec& spec,
                                  const Progress& progress, const DomainHooks* domains)
{
    Prepared p = preflight(journal, spec, domains);
    write_ahead(journal, spec, p);
    Manifest& m = p.m;
    TransactionReport report;
    report.generation = m.id;
    try {
        check_signal(spec.kind);
        write_targets(journal.fs(), spec, m, progress, domains, report);
        run_after_steps(journal, runner, m, progress);
        check_signal(spec.kind);
        if (spec.before_commit) {
            check(util::fault::check("before-commit", "guard"));
            check(spec.before_commit()); // the guard answers the signals while it waits
        }
        // 6. Commit, with the files as the after-steps left them.
        record_after_state(journal.fs(), m);
        m.state = GenerationState::committed;
        m.finished = utc_now();
        check(journal.save(m));
    } catch (const Error& e) {
        undo_failed_transaction(journal, runner, m, e, progress, domains);
    }
    report.commands = m.commands;
    return report;
}

} // namespace passthru::apply
