// SPDX-License-Identifier: GPL-2.0-or-later
// passthru capture FILE: the files of the host that passthru reads, as a
// tarball laid out as a --root tree, with private data removed (src/capture/).
// Runs scan, and plan for every VM config present, with a read log on the
// HostFs; writes nothing under the root.
#include <cstdio>
#include <ctime>
#include <memory>

#include "capture/capture.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "plan/planner.hpp"
#include "util/local_file.hpp"

namespace passthru::cli {

namespace {

// Plans for one VM and the GPUs `gpus`, for what the plan reads: a refused
// plan, or one that stops, has read what it needed to refuse, and that is
// packed too.
void plan_for_reads(const Context& ctx, const scan::Inventory& inventory, const data::DataDir& data, std::uint64_t vmid,
                    const std::string& gpus)
{
    plan::Request request;
    request.vm = std::to_string(vmid);
    request.vmid = vmid;
    request.gpus = gpus;
    try {
        (void)plan::make_plan(inventory, ctx.fs, data, request);
    } catch (const Error& stopped) {
        (void)stopped.code(); // its reads are in the log all the same
    }
}

// Runs what the commands read (scan; plan of every VM, or of a new VM 100
// when there is none, with all GPUs and with each card alone; the VM
// history explain reads) with `log` noting every path.
void record_host(Context& ctx, const std::shared_ptr<util::ReadLog>& log)
{
    ctx.fs.record_reads(log);
    capture::read_vm_history(ctx.fs);
    const data::DataDir data(ctx.fs, ctx.global.data_dir);
    const scan::Inventory inventory = scan_with_data(ctx, data);
    std::vector<std::uint64_t> ids = capture::vm_ids(ctx.fs);
    if (ids.empty()) {
        ids.push_back(100);
    }
    for (const auto id : ids) {
        plan_for_reads(ctx, inventory, data, id, "all");
        for (const auto& card : inventory.gpus) {
            plan_for_reads(ctx, inventory, data, id, card.slot);
        }
    }
    ctx.fs.record_reads(nullptr);
}

std::string summary(const capture::CaptureResult& r)
{
    std::string out = "captured " + std::to_string(r.files) + " files (" + std::to_string(r.placeholders) + " only listed, packed empty), "
                      + std::to_string(r.directories) + " directories, " + std::to_string(r.symlinks) + " symlinks\n";
    std::string kinds;
    for (const auto& [kind, count] : r.redacted) {
        kinds += (kinds.empty() ? "" : ", ") + std::to_string(count) + " " + std::string(capture::to_string(kind));
    }
    out += "redacted: " + (kinds.empty() ? std::string("nothing") : kinds + " in " + std::to_string(r.redacted_files) + " files") + " ("
           + capture::k_manifest_name + " in the archive lists them)\n";
    if (!r.skipped.empty()) {
        out += "skipped: " + std::to_string(r.skipped.size()) + " entries whose names are not UTF-8, e.g. " + r.skipped.front() + " ("
               + capture::k_manifest_name + " lists them)\n";
    }
    return out;
}

} // namespace

void capture_options(po::options_description& options)
{
    options.add_options()("keep-hostnames", "keep the host and node names (by default replaced by node1, node2 ...)")(
        "keep-addresses", "keep IP and MAC addresses (by default replaced by documentation and locally administered ones)")(
        "force", "replace FILE when it exists");
}

int run_capture(Context& ctx, const po::variables_map& vm)
{
    if (vm.count(k_operand_key) == 0U) {
        throw Error(Errc::usage, "capture needs the archive to write: passthru capture FILE (FILE.tar.gz)");
    }
    const std::string file = vm[k_operand_key].as<std::vector<std::string>>().front();
    if (file.empty() || file == "-") {
        throw Error(Errc::usage, "capture needs a file name, not '" + file + "'");
    }
    if (vm.count("force") == 0U && util::local_entry_exists(file)) {
        throw Error(Errc::precondition, "refused: " + file + " exists; capture does not replace it").with_hint("add --force to replace it");
    }
    auto log = std::make_shared<util::ReadLog>();
    record_host(ctx, log);
    capture::CaptureOptions options;
    options.redact.hostnames = vm.count("keep-hostnames") == 0U;
    options.redact.addresses = vm.count("keep-addresses") == 0U;
    options.compression = capture::compression_for(file);
    options.when = std::time(nullptr);
    options.version = PASSTHRU_VERSION;
    auto result = capture::pack(ctx.fs, log->entries(), options);
    if (!result) {
        throw result.error();
    }
    // The summary first: when stdout is closed or broken, FILE is not
    // written at all rather than written unannounced.
    std::fputs(summary(*result).c_str(), stdout);
    if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
        throw Error(Errc::io, "cannot write the summary to standard output (closed?): " + file + " was not written");
    }
    // Temporary file and rename in FILE's directory: FILE is the whole
    // archive or is not there (nor changed).
    if (auto saved = util::save_local_file(file, result->archive, 0600); !saved) {
        throw Error(saved.error().code(), "capture: " + std::string(saved.error().what()));
    }
    std::printf("wrote %s\n", file.c_str());
    return exit_code::ok;
}

} // namespace passthru::cli
