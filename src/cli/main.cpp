// SPDX-License-Identifier: GPL-2.0-or-later
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "cli/global_words.hpp"
#include "cli/help.hpp"
#include "cli/terminal_guard.hpp"
#include "util/error.hpp"

using namespace passthru;
using namespace passthru::cli;

namespace {

void print_error(const Error& err, bool color)
{
    std::fprintf(stderr, "passthru: %s %s\n", util::styled("error:", util::Style::red, color).c_str(),
                 with_global_words(err.what()).c_str());
    for (const auto& ctx : err.context()) {
        std::fprintf(stderr, "passthru: note: while %s\n", ctx.c_str());
    }
    for (const auto& hint : err.hints()) {
        std::fprintf(stderr, "hint: %s\n", with_global_words(hint).c_str());
    }
}

// With --json, stdout carries one JSON document even when the command fails
// (schema passthru.error/1, docs/scan-json.md): scripts parse one document
// and need not scrape stderr. The one line and its hints still go to stderr.
bool json_requested(int argc, char** argv)
{
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--") == 0) {
            return false;
        }
        if (std::strcmp(argv[i], "--json") == 0) {
            return true;
        }
    }
    return false;
}

void print_json_error(const Error& err, int exit_code)
{
    const nlohmann::json doc = {
        {"schema", "passthru.error/1"},
        {"error", {{"message", err.what()}, {"hints", err.hints()}, {"exit_code", exit_code}}},
    };
    std::fputs((doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), stdout);
    std::fflush(stdout);
}

// Prints the error (and its JSON document with --json); its exit code.
int report_error(const Error& err, bool color, bool json)
{
    std::fflush(stdout);
    const int code = exit_code_for(err.code());
    if (json) {
        print_json_error(err, code);
    }
    print_error(err, color);
    return code;
}

util::ColorMode parse_color(const std::string& text)
{
    if (text == "auto") {
        return util::ColorMode::auto_detect;
    }
    if (text == "always") {
        return util::ColorMode::always;
    }
    if (text == "never") {
        return util::ColorMode::never;
    }
    throw Error(Errc::usage, "--color must be auto, always or never, not '" + text + "'");
}

// error_color: whether the error printed by main() gets colour; set as soon
// as --color is known so that --color never also holds for errors.
const Command* find_command(const std::string& name)
{
    for (const auto& c : commands()) {
        if (c.name == name) {
            return &c;
        }
    }
    throw Error(Errc::usage, "unknown command '" + name + "'").with_hint("run 'passthru --help' for the commands");
}

// No abbreviations: an admin tool that writes /etc takes only the options'
// full names (--ro is not --root, --gp is not --gpus).
constexpr int k_style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;

// The index in argv of the command's name: the first word that is neither an
// option nor the value of a global option that takes one (argc: none).
int command_index(int argc, char** argv, const po::options_description& global)
{
    for (int i = 1; i < argc; ++i) {
        const std::string_view word = argv[i];
        if (word.size() < 2 || word[0] != '-') {
            return i;
        }
        if (word.find('=') != std::string_view::npos) {
            continue;
        }
        const bool is_long = word[1] == '-';
        const std::string name(is_long ? word.substr(2) : word.substr(0, 2));
        const auto* option = global.find_nothrow(name, false);
        // A short option with its value attached (-xVALUE) takes no next word.
        if (option != nullptr && option->semantic()->max_tokens() > 0 && (is_long || word.size() == 2)) {
            ++i;
        }
    }
    return argc;
}

// The global options before the command; anything else there is a usage error.
po::variables_map parse_global_options(const std::vector<std::string>& words, const po::options_description& global)
{
    po::variables_map gvm;
    try {
        po::store(po::command_line_parser(words).options(global).style(k_style).run(), gvm);
    } catch (const po::unknown_option& err) {
        throw Error(Errc::usage, std::string(err.what()) + did_you_mean(err.get_option_name(), global)
                                     + " before the command; usage: passthru [--root DIR] COMMAND [OPTIONS] (a command's options go "
                                       "after its name)");
    } catch (const po::error& err) {
        throw Error(Errc::usage, std::string(err.what())
                                     + " before the command; usage: passthru [--root DIR] COMMAND [OPTIONS] (a command's options go "
                                       "after its name)");
    }
    po::notify(gvm);
    return gvm;
}

// The words after the command name: its own options, the global options
// again, and at most its operand (apply's FILE). Any other word is a usage
// error on one line that names it and the command's usage.
po::variables_map parse_command_options(const Command& command, const std::vector<std::string>& words, po::options_description& cmd_options)
{
    command.add_options(cmd_options);
    cmd_options.add_options()("help,h", "show help for this command");
    po::options_description cmd_all;
    cmd_all.add(cmd_options);
    po::options_description global_again;
    global_again.add_options()("root", po::value<std::string>(), "")("data-dir", po::value<std::string>(),
                                                                     "")("color", po::value<std::string>(), "");
    cmd_all.add(global_again);
    po::options_description hidden;
    hidden.add_options()(k_operand_key, po::value<std::vector<std::string>>(), "");
    cmd_all.add(hidden);
    po::positional_options_description positional;
    positional.add(k_operand_key, -1);
    const auto refuse = [&command](const std::string& what) {
        return Error(Errc::usage, std::string(command.name) + ": " + what + "; usage: " + usage_line(command.name));
    };
    po::variables_map vm;
    try {
        const po::parsed_options parsed = po::command_line_parser(words).options(cmd_all).positional(positional).style(k_style).run();
        for (const auto& option : parsed.options) {
            if (option.string_key == k_operand_key && option.position_key < 0) { // the hidden name typed as an option
                throw po::unknown_option(option.original_tokens.front());
            }
        }
        po::store(parsed, vm);
        std::vector<std::string> order;
        for (const auto& option : parsed.options) {
            if (option.string_key == "vm" || option.string_key == "ct" || option.string_key == "gpus") {
                order.push_back(option.string_key);
            }
        }
        if (!order.empty()) {
            vm.insert({k_guest_order_key, po::variable_value(boost::any(std::move(order)), false)});
        }
    } catch (const po::unknown_option& err) {
        throw refuse(err.what() + did_you_mean(err.get_option_name(), cmd_all));
    } catch (const po::error& err) {
        throw refuse(err.what());
    }
    if (vm.count(k_operand_key) != 0U) {
        const auto& operands = vm[k_operand_key].as<std::vector<std::string>>();
        // An operand with "..." takes any number of words (kernel's "check [KVER...]"),
        // another one word for each of its own ("dump SLOT FILE": three).
        const std::size_t operand_words = 1 + static_cast<std::size_t>(std::count(command.operand.begin(), command.operand.end(), ' '));
        const std::size_t allowed = command.operand.empty()                                 ? 0
                                    : command.operand.find("...") != std::string_view::npos ? operands.size()
                                                                                            : operand_words;
        if (operands.size() > allowed) {
            throw refuse("unexpected word '" + operands[allowed] + "'");
        }
    }
    po::notify(vm);
    return vm;
}

// A global option given after the command wins over the same one before it.
GlobalOptions global_options(const po::variables_map& gvm, const po::variables_map& vm, util::ColorMode color_mode)
{
    GlobalOptions options;
    options.root = vm.count("root") != 0U ? vm["root"].as<std::string>() : gvm["root"].as<std::string>();
    if (vm.count("data-dir") != 0U) {
        options.data_dir = vm["data-dir"].as<std::string>();
    } else if (gvm.count("data-dir") != 0U) {
        options.data_dir = gvm["data-dir"].as<std::string>();
    }
    options.color = vm.count("color") != 0U ? parse_color(vm["color"].as<std::string>()) : color_mode;
    return options;
}

int run_command(const Command& command, const GlobalOptions& options, const po::variables_map& vm, bool stdout_color, bool error_color)
{
    auto fs = util::HostFs::open(options.root);
    if (!fs) {
        throw Error(Errc::usage, std::string("--root: ") + fs.error().what())
            .with_hint("give the directory that holds the host's /sys, /proc and /etc");
    }
    // Only --root / (or no --root) means this host: a path that merely
    // resolves to / (a symlink, /tmp/..) would switch to the live host unseen.
    if (fs->is_live() && options.root.string() != "/") {
        throw Error(Errc::usage, "--root " + options.root.string() + " resolves to /, this host itself")
            .with_hint("to work on this host, leave --root out (or give --root /); otherwise give the copy's directory");
    }
    // What every printed `passthru` command carries to mean this run's host and data.
    std::string words = fs->is_live() ? std::string() : " --root " + util::shell_quote({fs->root().string()});
    if (options.data_dir) {
        words += " --data-dir " + util::shell_quote({options.data_dir->string()});
    }
    set_global_words(std::move(words));
    Context ctx{.global = options,
                .fs = std::move(*fs),
                .runner = util::CommandRunner(util::RunMode::record),
                .color_out = false,
                .color_err = false,
                .ssh_connection = std::nullopt};
    if (ctx.fs.is_live()) {
        ctx.runner = util::CommandRunner(util::RunMode::execute);
        if (const char* ssh = std::getenv("SSH_CONNECTION"); ssh != nullptr) {
            ctx.ssh_connection = ssh;
        }
    }
    ctx.color_out = stdout_color;
    ctx.color_err = error_color;
    notice_interrupted(ctx, command.name); // a kill -9 mid-apply is reported by every command
    return command.run(ctx, vm);
}

int run(int argc, char** argv, bool& error_color, std::FILE* real_stderr)
{
    po::options_description global("Global options");
    add_global_options(global);
    const int at = command_index(argc, argv, global);
    const po::variables_map gvm = parse_global_options(std::vector<std::string>(argv + 1, argv + at), global);

    const auto color_mode = parse_color(gvm["color"].as<std::string>());
    error_color = util::use_color(real_stderr, color_mode);
    guard_stream(stderr, error_color);
    if (gvm.count("version") != 0U) {
        std::printf("passthru %s\n", PASSTHRU_VERSION);
        return exit_code::ok;
    }
    if (at == argc) {
        if (gvm.count("help") != 0U) {
            std::fputs(main_help(global).c_str(), stdout);
            return exit_code::ok;
        }
        throw Error(Errc::usage, "no command given").with_hint("run 'passthru --help' for the commands");
    }
    const Command& command = *find_command(argv[at]);
    po::options_description cmd_options(std::string(command.name) + " options");
    const po::variables_map vm = parse_command_options(command, std::vector<std::string>(argv + at + 1, argv + argc), cmd_options);
    if (gvm.count("help") != 0U || vm.count("help") != 0U) {
        std::fputs(command_help(command, cmd_options, global).c_str(), stdout);
        return exit_code::ok;
    }
    const GlobalOptions options = global_options(gvm, vm, color_mode);
    error_color = util::use_color(real_stderr, options.color);
    // From here on host text may be printed: both streams escape control
    // characters on their way out (cli/terminal_guard.hpp); JSON stays exact.
    guard_stream(stderr, error_color);
    const bool stdout_color = util::use_color(stdout, options.color); // before the guard hides the TTY
    const bool json_out = vm.count("json") != 0U || (vm.count("out") != 0U && vm["out"].as<std::string>() == "-");
    if (!json_out) {
        guard_stream(stdout, stdout_color);
    }
    return run_command(command, options, vm, stdout_color, error_color);
}

} // namespace

int main(int argc, char** argv)
{
    // A closed output (passthru apply | head) must never kill passthru
    // between two writes of a transaction: a write to it fails with EPIPE
    // instead, which no command takes as a reason to stop. The commands it
    // runs get the default action back (util/command_runner.cpp).
    std::signal(SIGPIPE, SIG_IGN);
    std::FILE* const real_stderr = stderr;
    bool color = util::use_color(stderr, util::ColorMode::auto_detect);
    // Every error line goes through the guard, a usage error's too: it
    // carries the words typed, and styled() colour needs the guard to show.
    guard_stream(stderr, color);
    const bool json = json_requested(argc, argv);
    try {
        const int rc = run(argc, argv, color, real_stderr);
        std::fflush(stdout);
        return rc;
    } catch (const Error& err) {
        return report_error(err, color, json);
    } catch (const po::error& err) {
        return report_error(Error(Errc::usage, err.what()).with_hint("run 'passthru --help' or 'passthru COMMAND --help'"), color, json);
    } catch (const std::bad_alloc&) {
        // Straight to the descriptor: the guarded stream would allocate.
        static constexpr std::string_view k_oom = "passthru: error: out of memory\n";
        (void)!::write(STDERR_FILENO, k_oom.data(), k_oom.size());
        return exit_code::internal;
    } catch (const std::exception& err) {
        return report_error(Error(Errc::internal, std::string("internal error: ") + err.what())
                                .with_hint("this is a bug in passthru; please report it with the command you ran"),
                            color, json);
    }
}
