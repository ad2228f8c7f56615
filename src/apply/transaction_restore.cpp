// SPDX-License-Identifier: GPL-2.0-or-later
// restore_generation (apply/transaction.hpp): a generation's files, directories and
// libvirt domains put back as they were, and its after-steps re-run or undone;
// what cannot be done is reported with the command that does it by hand.
#include "apply/transaction.hpp"
#include "apply/transaction_detail.hpp"
#include "plan/after_step.hpp"
#include "scan/libvirt_domain.hpp"
#include "util/fault.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"

namespace passthru::apply {

namespace {

using detail::check;
using detail::emit;
using detail::kept_resources;
using detail::remove_temp_files;
using detail::run_timed;
using detail::shown;
using detail::type_name;

// One file back to its pre-image (or removed when it did not exist);
// throws with what went wrong. Returns false when nothing needed doing.
bool restore_file(const Journal& journal, const Manifest& m, const JournalFile& f, const Progress& progress)
{
    const util::HostFs& fs = journal.fs();
    check(util::fault::check("restore", f.path));
    const util::FileInfo info = fs.stat(f.path);
    if (!f.before_sha256) {
        // It did not exist before: remove what the transaction created.
        if (info.type == util::FileType::missing) {
            return false;
        }
        if (info.type != util::FileType::regular) {
            throw Error(Errc::io, "it is now " + type_name(info.type) + ", not the file passthru created");
        }
        emit(progress, "removing " + f.path);
        check(fs.remove_file(f.path));
        return true;
    }
    auto pre = journal.read_pre_image(m.id, f.path);
    if (!pre) {
        throw Error(Errc::io, std::string("its pre-image is unreadable: ") + pre.error().what());
    }
    if (util::sha256_hex(*pre) != *f.before_sha256) {
        throw Error(Errc::io, "its pre-image in generation " + std::to_string(m.id) + " does not match the recorded checksum");
    }
    if (info.type == util::FileType::regular) {
        auto now = fs.read_file(f.path);
        if (now && util::sha256_hex(*now) == *f.before_sha256) {
            return false; // never touched, or already restored
        }
    } else if (info.type != util::FileType::missing) {
        throw Error(Errc::io, "it is now " + type_name(info.type));
    } else {
        check(fs.create_directories(util::dir_name(f.path)));
    }
    emit(progress, "restoring " + f.path);
    check(fs.write_file_atomic(f.path, *pre, f.mode, util::FsSync::yes, util::FileOwnership{f.mode, f.uid, f.gid}));
    auto back = fs.read_file(f.path);
    if (!back || util::sha256_hex(*back) != *f.before_sha256) {
        throw Error(Errc::io, "it does not read back as its pre-image");
    }
    return true;
}

void restore_files(const Journal& journal, const Manifest& m, const Progress& progress, RestoreReport& rep)
{
    const util::HostFs& fs = journal.fs();
    for (auto it = m.files.rbegin(); it != m.files.rend(); ++it) {
        const JournalFile& f = *it;
        try {
            if (restore_file(journal, m, f, progress)) {
                rep.restored.push_back(f.path);
            }
        } catch (const Error& e) {
            std::string what = f.path + ": " + e.what() + "; ";
            if (f.before_sha256) {
                what += "restore it by hand: cp -p " + shown(fs, Journal::pre_image_path(m.id, f.path)) + " " + shown(fs, f.path);
            } else {
                what += "it did not exist before: remove it by hand: rm " + shown(fs, f.path);
            }
            rep.failures.push_back(std::move(what));
        }
    }
    for (const auto& f : m.files) {
        remove_temp_files(fs, f.path, rep.failures);
    }
    for (auto it = m.created_dirs.rbegin(); it != m.created_dirs.rend(); ++it) {
        if (!fs.is_dir(*it) || fs.stat(*it).type != util::FileType::directory) {
            continue;
        }
        auto entries = fs.list_dir(*it);
        if (!entries || !entries->empty()) {
            continue; // something else lives there now: keep it
        }
        if (auto r = fs.remove_directory(*it); !r) {
            rep.failures.push_back(*it + ": " + r.error().what() + "; it did not exist before: rmdir " + shown(fs, *it));
        }
    }
}

void restore_domains(const Journal& journal, const Manifest& m, const Progress& progress, const DomainHooks* domains, RestoreReport& rep)
{
    const util::HostFs& fs = journal.fs();
    for (auto it = m.domains.rbegin(); it != m.domains.rend(); ++it) {
        plan::DomainChange dc;
        dc.uri = it->uri;
        dc.name = it->name;
        if (it->had_before) {
            auto pre = journal.read_domain_pre_image(m.id, it->name);
            if (!pre) {
                rep.failures.push_back("libvirt domain " + it->name + ": its pre-image is unreadable; define it by hand from "
                                       + shown(fs, Journal::domain_pre_image_path(m.id, it->name)));
                continue;
            }
            dc.before_xml = std::move(*pre);
        }
        if (!fs.is_live() && !scan::is_in_process_uri(it->uri)) {
            rep.failures.push_back("libvirt domain " + it->name + ": under --root passthru connects to no libvirt daemon (" + it->uri
                                   + "); on the host: "
                                   + (it->had_before ? "virsh define " + shown(fs, Journal::domain_pre_image_path(m.id, it->name))
                                                     : "virsh undefine " + it->name));
            continue;
        }
        if (domains == nullptr || !domains->restore) {
            rep.failures.push_back("libvirt domain " + it->name + ": cannot restore it in this build; "
                                   + (it->had_before ? "virsh define " + shown(fs, Journal::domain_pre_image_path(m.id, it->name))
                                                     : "virsh undefine " + it->name));
            continue;
        }
        emit(progress, "restoring libvirt domain " + it->name);
        if (auto r = domains->restore(dc); !r) {
            rep.failures.push_back("libvirt domain " + it->name + ": " + r.error().what());
        }
    }
}

// After-steps of a generation whose steps started: the re-runnable ones run
// again on the restored files; the others are named as not undone.
void undo_after_steps(util::CommandRunner& runner, const Manifest& m, const Progress& progress, RestoreReport& rep)
{
    std::size_t n = 0;
    for (const auto& cmd : m.commands) {
        if (cmd.undo == plan::StepUndo::rerun) {
            ++n;
            emit(progress, "re-running " + util::shell_quote(cmd.argv));
            auto result = run_timed(runner, cmd.argv, progress, "");
            if (!result || result->exit_code != 0) {
                rep.failures.push_back(util::shell_quote(cmd.argv) + ": "
                                       + (result ? "exit code " + std::to_string(result->exit_code) : std::string(result.error().what()))
                                       + "; run it by hand once the files above are restored");
            }
            continue;
        }
        if (cmd.status != CommandStatus::ran && cmd.status != CommandStatus::failed) {
            continue; // never run (or only recorded): nothing to undo
        }
        if (cmd.undo == plan::StepUndo::command) {
            const auto undo = plan::after_step_effects(cmd.argv).undo_argv;
            emit(progress, "undoing " + util::shell_quote(cmd.argv) + " with " + util::shell_quote(undo));
            auto result = runner.run(undo);
            if (!result || result->exit_code != 0) {
                rep.failures.push_back(util::shell_quote(undo) + ": "
                                       + (result ? "exit code " + std::to_string(result->exit_code) : std::string(result.error().what()))
                                       + "; run it by hand");
            }
            continue;
        }
        for (auto& k : kept_resources(cmd)) {
            rep.not_undone.push_back(std::move(k));
        }
        if (cmd.undo == plan::StepUndo::manual) {
            rep.not_undone.push_back(util::shell_quote(cmd.argv)
                                     + (cmd.manual_undo.empty() ? "" : "; undo it by hand: " + util::join(cmd.manual_undo, "; ")));
        }
    }
    rep.commands_rerun = n > 0;
}

} // namespace

RestoreReport restore_generation(const Journal& journal, util::CommandRunner& runner, Manifest& m, const Progress& progress,
                                 const DomainHooks* domains)
{
    RestoreReport rep;
    restore_files(journal, m, progress, rep);
    restore_domains(journal, m, progress, domains, rep);
    if (m.commands_started) {
        undo_after_steps(runner, m, progress, rep);
    }
    m.state = rep.failures.empty() ? GenerationState::rolled_back : GenerationState::restore_failed;
    m.manual_steps = rep.failures;
    m.finished = utc_now();
    if (auto r = journal.save(m); !r) {
        // The files are what matters; a stale "pending" only makes the next
        // command offer the (idempotent) restore again.
        emit(progress, std::string("warning: cannot record the outcome in the journal: ") + r.error().what());
    }
    return rep;
}

Error rollback_failed_error(std::uint64_t id, std::string_view what, const RestoreReport& report)
{
    Error err(Errc::rollback_failed,
              std::string(what) + "; restoring generation " + std::to_string(id) + " failed too, so the host is half-changed");
    for (const auto& f : report.failures) {
        err.with_hint(f);
    }
    err.with_hint("after fixing these by hand, run 'passthru rollback' again to check (it skips files already restored)");
    return err;
}

} // namespace passthru::apply
