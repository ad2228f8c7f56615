// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <boost/program_options.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/command_runner.hpp"
#include "util/host_fs.hpp"
#include "util/term.hpp"

namespace passthru::cli {

namespace po = boost::program_options;

struct GlobalOptions
{
    std::filesystem::path root = "/";
    std::optional<std::filesystem::path> data_dir;
    util::ColorMode color = util::ColorMode::auto_detect;
};

// Everything a command needs: the host (through HostFs), the command runner
// (records under --root, runs on the live host) and output settings.
struct Context
{
    GlobalOptions global;
    util::HostFs fs;
    util::CommandRunner runner;
    bool color_out = false; // stdout
    bool color_err = false; // stderr
    // The SSH session this command runs in (SSH_CONNECTION), read once by
    // run_command and only when the root is this host: it describes this
    // machine's session, so under --root it is nullopt.
    std::optional<std::string> ssh_connection;
};

struct Command
{
    std::string_view name;
    std::string_view summary; // one line, for `passthru --help`
    void (*add_options)(po::options_description& options);
    // Returns the exit code; throws Error for failures (mapped in main).
    int (*run)(Context& ctx, const po::variables_map& vm);
    // The words, not options, that the command takes (apply's "FILE", rom's
    // "dump SLOT FILE": one per blank-separated name), stored under k_operand_key;
    // empty: it takes none. Any other word is a usage error.
    std::string_view operand{};
};

// Where the command's operand is in its variables_map.
inline constexpr const char* k_operand_key = "operand";
// The guest options (--vm, --ct, --gpus) in the order given, each as
// "vm", "ct" or "gpus": stored by main under this key, so that each --gpus binds
// to the guest option before it (cli/request_options.hpp).
inline constexpr const char* k_guest_order_key = "guest-order";

const std::vector<Command>& commands();

// Command implementations, one file each (cmd_<name>.cpp).
void scan_options(po::options_description& options);
int run_scan(Context& ctx, const po::variables_map& vm);
void plan_options(po::options_description& options);
int run_plan(Context& ctx, const po::variables_map& vm);
void apply_options(po::options_description& options);
int run_apply(Context& ctx, const po::variables_map& vm);
void verify_options(po::options_description& options);
int run_verify(Context& ctx, const po::variables_map& vm);
void rom_options(po::options_description& options);
int run_rom(Context& ctx, const po::variables_map& vm);
void history_options(po::options_description& options);
int run_history(Context& ctx, const po::variables_map& vm);
void rollback_options(po::options_description& options);
int run_rollback(Context& ctx, const po::variables_map& vm);
void confirm_options(po::options_description& options);
int run_confirm(Context& ctx, const po::variables_map& vm);
void explain_options(po::options_description& options);
int run_explain(Context& ctx, const po::variables_map& vm);
void kernel_options(po::options_description& options);
int run_kernel(Context& ctx, const po::variables_map& vm);
void capture_options(po::options_description& options);
int run_capture(Context& ctx, const po::variables_map& vm);

// Diagnostics on stderr: "passthru: warning: ...", "hint: ...".
void print_warning(const Context& ctx, std::string_view message);
void print_note(const Context& ctx, std::string_view message);

} // namespace passthru::cli
