// SPDX-License-Identifier: GPL-2.0-or-later
// Build-time generator (not installed): renders the man page and the bash and
// zsh completions from the same command table, options_description objects
// and help tables (src/cli/help.hpp) that `passthru --help` prints, so the
// three cannot drift from the binary.
//
//   passthru_docgen man TEMPLATE VERSION DATE SCAN   roff on stdout; SCAN
//       holds `passthru scan` output of the sample host for the example
//   passthru_docgen bash                        bash completion on stdout
//   passthru_docgen zsh                         zsh completion on stdout
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "cli/help.hpp"

using namespace passthru;
using namespace passthru::cli;

namespace {

struct OptionInfo
{
    std::string long_name;    // "root"
    std::string short_name;   // "h" or empty
    std::string value_name;   // "DIR", "arg"; empty for a switch
    std::string default_text; // "/" or empty
    std::string description;
};

std::vector<OptionInfo> options_of(const po::options_description& desc)
{
    std::vector<OptionInfo> out;
    for (const auto& opt : desc.options()) {
        OptionInfo info;
        info.long_name = opt->long_name();
        const std::string shown = opt->format_name(); // "-h [ --help ]" or "--root"
        if (shown.size() > 1 && shown[0] == '-' && shown[1] != '-') {
            info.short_name = shown.substr(1, shown.find(' ') - 1);
        }
        if (opt->semantic()->max_tokens() > 0) {
            std::string param = opt->format_parameter(); // "DIR (=/)"
            const auto def = param.find(" (=");
            if (def != std::string::npos && param.back() == ')') {
                info.default_text = param.substr(def + 3, param.size() - def - 4);
                param = param.substr(0, def);
            }
            info.value_name = param == "arg" ? "VALUE" : param;
        }
        info.description = opt->description();
        out.push_back(std::move(info));
    }
    return out;
}

// The options a command accepts after its name, exactly as main.cpp builds them.
std::vector<OptionInfo> command_options(const Command& command)
{
    po::options_description desc;
    command.add_options(desc);
    desc.add_options()("help,h", "show help for this command");
    return options_of(desc);
}

std::vector<OptionInfo> global_options()
{
    po::options_description desc;
    add_global_options(desc);
    return options_of(desc);
}

[[noreturn]] void die(const std::string& message)
{
    std::fprintf(stderr, "passthru_docgen: error: %s\n", message.c_str());
    std::exit(1);
}

// ---------------------------------------------------------------- roff

std::string roff_escape(std::string_view text)
{
    std::string out;
    for (char c : text) {
        if (c == '\\') {
            out += "\\e";
        } else if (c == '-') {
            out += "\\-";
        } else {
            out += c;
        }
    }
    return out;
}

// A text line of roff: a leading '.' or '\'' would be a request.
std::string roff_line(std::string_view text)
{
    std::string out = roff_escape(text);
    if (!out.empty() && (out[0] == '.' || out[0] == '\'')) {
        out.insert(0, "\\&");
    }
    return out;
}

// Plain text (help.cpp conventions) to roff: paragraphs and literal blocks.
std::string roff_text(std::string_view text)
{
    std::istringstream in{std::string(text)};
    std::string line;
    std::string out;
    bool in_literal = false;
    bool para_open = false;
    while (std::getline(in, line)) {
        const bool literal = line.rfind("  ", 0) == 0;
        if (line.empty()) {
            if (in_literal) {
                out += ".fi\n.RE\n";
                in_literal = false;
            }
            para_open = false;
            continue;
        }
        if (literal && !in_literal) {
            out += ".PP\n.RS 4\n.nf\n";
            in_literal = true;
        } else if (!literal && in_literal) {
            out += ".fi\n.RE\n";
            in_literal = false;
            para_open = false;
        }
        if (!literal && !para_open) {
            out += ".PP\n";
            para_open = true;
        }
        out += roff_line(literal ? std::string_view(line).substr(2) : std::string_view(line)) + "\n";
    }
    if (in_literal) {
        out += ".fi\n.RE\n";
    }
    return out;
}

std::string roff_options(const std::vector<OptionInfo>& options)
{
    std::string out;
    for (const auto& o : options) {
        out += ".TP\n";
        if (!o.short_name.empty()) {
            out += "\\fB\\-" + roff_escape(o.short_name) + "\\fR, ";
        }
        out += "\\fB\\-\\-" + roff_escape(o.long_name) + "\\fR";
        if (!o.value_name.empty()) {
            out += " \\fI" + roff_escape(o.value_name) + "\\fR";
        }
        // appended in two steps: GCC 12 at -O3 takes `"\n" + f()` for an overlapping
        // copy (-Wrestrict, a false positive of its string inlining)
        out += '\n';
        out += roff_line(o.description);
        if (!o.default_text.empty()) {
            out += " (default: " + roff_escape(o.default_text) + ")";
        }
        out += "\n";
    }
    return out;
}

std::string man_commands()
{
    std::string out;
    for (const auto& c : commands()) {
        const CommandDoc* doc = command_doc(c.name);
        if (doc == nullptr) {
            die("command '" + std::string(c.name) + "' has no entry in the help table (src/cli/help.cpp)");
        }
        out += ".SS \"" + roff_escape(c.name) + "\"\n";
        out += "\\fBpassthru\\fR [\\fIGLOBAL OPTIONS\\fR] \\fB" + roff_escape(c.name) + "\\fR";
        if (!doc->synopsis.empty()) {
            out += " " + roff_escape(doc->synopsis);
        }
        out += "\n.PP\n" + roff_line(c.summary) + ".\n";
        out += roff_text(doc->description);
        out += roff_text("On SIGHUP, SIGINT, SIGTERM: " + std::string(doc->signals));
        out += ".PP\nOptions of \\fB" + roff_escape(c.name) + "\\fR:\n";
        out += roff_options(command_options(c));
    }
    return out;
}

std::string man_command_list()
{
    std::string out;
    for (const auto& c : commands()) {
        out += ".TP\n\\fB" + roff_escape(c.name) + "\\fR\n" + roff_line(c.summary) + "\n";
    }
    return out;
}

std::string man_exit_status()
{
    std::string out;
    for (const auto& e : exit_code_docs()) {
        out += ".TP\n.B " + std::to_string(e.code) + "\n" + roff_line(e.meaning) + "\n";
    }
    return out;
}

// The "GPU cards" and "Problems" part of a scan, for a literal block.
std::string example_scan(const std::string& path)
{
    std::ifstream in(path);
    if (!in) {
        die("cannot read " + path);
    }
    std::string line;
    std::string out;
    bool started = false;
    bool wrap = false;
    while (std::getline(in, line)) {
        started = started || line == "GPU cards";
        if (!started) {
            continue;
        }
        // The card table stays one row a line (it may overflow a narrow
        // terminal); the problems are prose and get wrapped.
        wrap = wrap || line == "Problems";
        const std::size_t indent = line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' ');
        std::string rest = line;
        const std::size_t width = 70;
        while (wrap && rest.size() > width) {
            auto cut = rest.rfind(' ', width);
            if (cut == std::string::npos || cut <= indent + 4) {
                break;
            }
            out += roff_line(rest.substr(0, cut)) + "\n";
            rest = std::string(indent + 4, ' ') + rest.substr(cut + 1);
        }
        out += roff_line(rest) + "\n";
    }
    if (!started) {
        if (std::getenv("PASSTHRU_DOCGEN_STRICT") != nullptr) {
            die(path + " has no 'GPU cards' section: passthru scan failed on the sample host");
        }
        // A development build keeps building; the man page test fails on this line.
        std::fprintf(stderr, "passthru_docgen: warning: passthru scan failed on the sample host; the man page lacks its example\n");
        return "(passthru scan failed on the sample host when this page was built)\n";
    }
    return out;
}

int render_man(const std::string& template_path, const std::string& version, const std::string& date, const std::string& scan_path)
{
    std::ifstream in(template_path);
    if (!in) {
        die("cannot read " + template_path);
    }
    const std::map<std::string, std::string> blocks{
        {"@COMMAND_LIST@", man_command_list()},
        {"@COMMANDS@", man_commands()},
        {"@GLOBAL_OPTIONS@", roff_options(global_options())},
        {"@EXIT_STATUS@", man_exit_status()},
        {"@EXAMPLE_SCAN@", example_scan(scan_path)},
    };
    std::string line;
    while (std::getline(in, line)) {
        if (auto it = blocks.find(line); it != blocks.end()) {
            std::cout << it->second;
            continue;
        }
        for (const auto& [key, value] : {std::pair<std::string, std::string>{"@VERSION@", version}, {"@DATE@", date}}) {
            for (auto pos = line.find(key); pos != std::string::npos; pos = line.find(key, pos + value.size())) {
                line.replace(pos, key.size(), value);
            }
        }
        if (std::regex_search(line, std::regex("@[A-Z_]+@"))) {
            die("unknown placeholder in " + template_path + ": " + line);
        }
        std::cout << line << '\n';
    }
    return 0;
}

// ---------------------------------------------------------------- completion

// How to complete an option's value. Options not listed take free text.
enum class ValueKind
{
    none,
    directory,
    file,
    choices,
    gpus,
    vmid,
    nics,
    nic,
};

struct ValueCompletion
{
    ValueKind kind = ValueKind::none;
    std::vector<std::string> choices;
};

std::vector<std::string> split_on(const std::string& text, char sep)
{
    std::vector<std::string> out;
    std::string part;
    std::istringstream in(text);
    while (std::getline(in, part, sep)) {
        out.push_back(part);
    }
    return out;
}

ValueCompletion value_completion(const OptionInfo& o)
{
    static const std::map<std::string, ValueCompletion> k_known{
        {"root", {ValueKind::directory, {}}},
        {"data-dir", {ValueKind::directory, {}}},
        {"color", {ValueKind::choices, {"auto", "always", "never"}}},
        {"backend", {ValueKind::choices, {"proxmox", "libvirt"}}},
        {"gpus", {ValueKind::gpus, {}}},
        {"vm", {ValueKind::vmid, {}}},
        {"bond", {ValueKind::nics, {}}},
        {"plan", {ValueKind::file, {}}},
        {"out", {ValueKind::file, {}}},
    };
    if (auto it = k_known.find(o.long_name); it != k_known.end()) {
        return it->second;
    }
    // "a|b|c (note)": the description lists the choices.
    const std::string first = o.description.substr(0, o.description.find(' '));
    if (first.find('|') != std::string::npos) {
        return {ValueKind::choices, split_on(first, '|')};
    }
    if (o.value_name == "FILE") {
        return {ValueKind::file, {}};
    }
    if (o.value_name == "DIR") {
        return {ValueKind::directory, {}};
    }
    return {};
}

std::string join_words(const std::vector<std::string>& words)
{
    std::string out;
    for (const auto& w : words) {
        out += (out.empty() ? "" : " ") + w;
    }
    return out;
}

std::string option_words(const std::vector<OptionInfo>& options)
{
    std::vector<std::string> words;
    for (const auto& o : options) {
        words.push_back("--" + o.long_name + (o.value_name.empty() ? "" : "="));
        if (!o.short_name.empty()) {
            words.push_back("-" + o.short_name);
        }
    }
    return join_words(words);
}

// The head of the bash completion: its header and the value completers
// (GPU cards, VMIDs and NICs under the root being completed).
constexpr std::string_view k_bash_helpers = R"SH(# bash completion for passthru(1)                        -*- shell-script -*-
# Generated at build time by passthru_docgen from passthru's own command
# table and options; do not edit.

# The GPU cards `passthru scan --json` lists under the root being completed:
# their indexes and slots, plus "all"; completes each item of a comma list.
_passthru_gpus()
{
    local root=$1 json items prefix=""
    json=$("${COMP_WORDS[0]}" --root "${root:-/}" --color never scan --json 2>/dev/null) || return
    items="all $(sed -n -e 's/^ *"index": \([0-9]*\).*/\1/p' -e 's/^ *"slot": "\([^"]*\)".*/\1/p' <<<"$json")"
    [[ $cur == *,* ]] && prefix=${cur%,*},
    COMPREPLY=($(compgen -P "$prefix" -W "$items" -- "${cur##*,}"))
    __ltrim_colon_completions "$cur"
}

# The Proxmox VE VMIDs under the root (/etc/pve/qemu-server/<vmid>.conf).
_passthru_vmids()
{
    local root=${1:-/} f ids=()
    for f in "$root"/etc/pve/qemu-server/*.conf; do
        [[ -e $f ]] || continue
        f=${f##*/}
        ids+=("${f%.conf}")
    done
    COMPREPLY=($(compgen -W "${ids[*]}" -- "$cur"))
}

# Network interfaces under the root; completes each item of a comma list.
_passthru_nics()
{
    local root=${1:-/} f nics=() prefix=""
    for f in "$root"/sys/class/net/*; do
        [[ -e $f ]] || continue
        nics+=("${f##*/}")
    done
    [[ $cur == *,* ]] && prefix=${cur%,*},
    COMPREPLY=($(compgen -P "$prefix" -W "${nics[*]}" -- "${cur##*,}"))
}

)SH";

// Every option that takes a value, global or of any command, by long name.
std::map<std::string, OptionInfo> value_options(const std::vector<OptionInfo>& globals)
{
    std::map<std::string, OptionInfo> all_values;
    for (const auto& o : globals) {
        if (!o.value_name.empty()) {
            all_values[o.long_name] = o;
        }
    }
    for (const auto& c : commands()) {
        for (const auto& o : command_options(c)) {
            if (!o.value_name.empty()) {
                all_values[o.long_name] = o;
            }
        }
    }
    return all_values;
}

// The `case $prev` arms: what completes the value of each option.
std::string bash_value_cases(const std::map<std::string, OptionInfo>& all_values)
{
    std::ostringstream out;
    for (const auto& [name, o] : all_values) {
        const auto vc = value_completion(o);
        out << "        --" << name << ")\n";
        switch (vc.kind) {
        case ValueKind::directory:
            out << "            _filedir -d\n";
            break;
        case ValueKind::file:
            out << "            _filedir\n";
            break;
        case ValueKind::choices:
            out << "            COMPREPLY=($(compgen -W \"" << join_words(vc.choices) << "\" -- \"$cur\"))\n";
            break;
        case ValueKind::gpus:
            out << "            _passthru_gpus \"$root\"\n";
            break;
        case ValueKind::vmid:
            out << "            _passthru_vmids \"$root\"\n";
            break;
        case ValueKind::nics:
        case ValueKind::nic:
            out << "            _passthru_nics \"$root\"\n";
            break;
        case ValueKind::none:
            break;
        }
        out << "            return\n            ;;\n";
    }
    return out.str();
}

// The `case $command` arms: the options each command (or none yet) takes.
std::string bash_command_cases(const std::vector<OptionInfo>& globals, const std::vector<OptionInfo>& after_command)
{
    std::vector<std::string> names;
    for (const auto& c : commands()) {
        names.emplace_back(c.name);
    }
    std::ostringstream out;
    out << R"SH(    local options
    case $command in
        "")
            if [[ $cur == -* ]]; then
)SH";
    out << "                options=\"" << option_words(globals) << "\"\n";
    out << R"SH(            else
)SH";
    out << "                COMPREPLY=($(compgen -W \"" << join_words(names) << "\" -- \"$cur\"))\n";
    out << R"SH(                return
            fi
            ;;
)SH";
    for (const auto& c : commands()) {
        out << "        " << c.name << ")\n";
        out << "            options=\"" << option_words(command_options(c)) << " " << option_words(after_command) << "\"\n";
        if (!c.operand.empty()) {
            // The one word the command takes besides its options (apply's FILE, explain's VMID).
            const bool vmid = c.operand == "VMID";
            out << "            [[ $cur == -* ]] || { " << (vmid ? "_passthru_vmids \"$root\"" : "_filedir") << "; return; }\n";
        }
        out << "            ;;\n";
    }
    return out.str();
}

int render_bash()
{
    const auto globals = global_options();
    std::vector<OptionInfo> after_command; // globals that main.cpp also accepts after the command
    for (const auto& o : globals) {
        if (!o.value_name.empty()) {
            after_command.push_back(o);
        }
    }
    std::string global_values; // "--root|--color|..."
    for (const auto& o : globals) {
        if (!o.value_name.empty()) {
            global_values += (global_values.empty() ? "--" : "|--") + o.long_name;
        }
    }

    std::ostringstream out;
    out << k_bash_helpers;
    out << R"SH(_passthru()
{
    local cur prev words cword split
    _init_completion -s -n : || return

    local i command="" root=/
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
)SH";
    out << "            " << global_values << ")\n";
    out << R"SH(                [[ ${words[i]} == --root ]] && root=${words[i + 1]}
                ((i++))
                ;;
            --root=*) root=${words[i]#--root=} ;;
            -*) ;;
            *) [[ -z $command ]] && command=${words[i]} ;;
        esac
    done

    case $prev in
)SH";
    out << bash_value_cases(value_options(globals));
    out << R"SH(    esac
    $split && return

)SH";
    out << bash_command_cases(globals, after_command);
    out << R"SH(        *)
            return
            ;;
    esac
    [[ $cur == -* ]] || return
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
    [[ ${COMPREPLY-} == *= ]] && compopt -o nospace
}
complete -F _passthru passthru
)SH";
    std::cout << out.str();
    return 0;
}

// Quoted for a single-quoted zsh word.
std::string zsh_quote(std::string_view text)
{
    std::string out = "'";
    for (char c : text) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out += c;
        }
    }
    return out + "'";
}

// An _arguments explanation: [ and ] must be escaped.
std::string zsh_explanation(std::string_view text)
{
    std::string out;
    for (char c : text) {
        if (c == '[' || c == ']' || c == '\\') {
            out += '\\';
        }
        out += c;
    }
    return out;
}

std::string zsh_action(const OptionInfo& o)
{
    const auto vc = value_completion(o);
    switch (vc.kind) {
    case ValueKind::directory:
        return "_files -/";
    case ValueKind::file:
        return "_files";
    case ValueKind::choices:
        return "(" + join_words(vc.choices) + ")";
    case ValueKind::gpus:
        return "_passthru_gpus";
    case ValueKind::vmid:
        return "_passthru_vmids";
    case ValueKind::nics:
    case ValueKind::nic:
        return "_passthru_nics";
    case ValueKind::none:
        break;
    }
    return " ";
}

std::string zsh_specs(const std::vector<OptionInfo>& options, std::string_view indent)
{
    std::string out;
    for (const auto& o : options) {
        std::string spec;
        const std::string expl = "[" + zsh_explanation(o.description) + "]";
        std::string value;
        if (!o.value_name.empty()) {
            value = ":" + o.value_name + ":" + zsh_action(o);
        }
        const bool exclusive = o.long_name == "help" || o.long_name == "version";
        const std::string excl = exclusive ? "(- *)" : "";
        if (!o.short_name.empty()) {
            out += std::string(indent) + zsh_quote(excl + "-" + o.short_name + expl + value) + " \\\n";
        }
        out += std::string(indent) + zsh_quote(excl + "--" + o.long_name + (o.value_name.empty() ? "" : "=") + expl + value) + " \\\n";
    }
    return out;
}

// The head of the zsh completion: its header and the value completers
// (GPU cards, VMIDs and NICs under the root being completed).
constexpr std::string_view k_zsh_helpers = R"SH(#compdef passthru
# zsh completion for passthru(1). Generated at build time by passthru_docgen
# from passthru's own command table and options; do not edit.

# The GPU cards `passthru scan --json` lists (indexes, slots and "all"), as a
# comma-separated list.
_passthru_gpus()
{
    local root=${opt_args[--root]:-${_passthru_root:-/}} json
    local -a items
    json=$(${service:-passthru} --root $root --color never scan --json 2>/dev/null) || return 1
    items=(all ${(f)"$(print -r -- $json | sed -n -e 's/^ *"index": \([0-9]*\).*/\1/p' -e 's/^ *"slot": "\([^"]*\)".*/\1/p')"})
    _sequence compadd - $items
}

_passthru_vmids()
{
    local root=${opt_args[--root]:-${_passthru_root:-/}}
    local -a ids
    ids=($root/etc/pve/qemu-server/*.conf(N:t:r))
    compadd - $ids
}

_passthru_nics()
{
    local root=${opt_args[--root]:-${_passthru_root:-/}}
    local -a nics
    nics=($root/sys/class/net/*(N:t))
    _sequence compadd - $nics
}

)SH";

// The `case $words[1]` arms: each command's options, then the globals it also takes.
std::string zsh_command_cases(const std::vector<OptionInfo>& after_command)
{
    std::string out;
    for (const auto& c : commands()) {
        out += "                " + std::string(c.name) + ")\n";
        out += "                    _arguments \\\n";
        out += zsh_specs(command_options(c), "                        ");
        out += zsh_specs(after_command, "                        ");
        if (!c.operand.empty()) {
            const char* action = c.operand == "VMID" ? ":_passthru_vmids" : ":_files";
            out += "                        " + zsh_quote("1:" + std::string(c.operand) + action) + " \\\n";
        }
        out += "                        && ret=0\n                    ;;\n";
    }
    return out;
}

int render_zsh()
{
    const auto globals = global_options();
    std::vector<OptionInfo> after_command;
    for (const auto& o : globals) {
        if (!o.value_name.empty()) {
            after_command.push_back(o);
        }
    }
    std::ostringstream out;
    out << k_zsh_helpers;
    out << R"SH(_passthru()
{
    local curcontext=$curcontext state line ret=1
    typeset -A opt_args
    _arguments -C \
)SH";
    out << zsh_specs(globals, "        ");
    out << R"SH(        '1:command:->command' \
        '*::argument:->argument' && ret=0

    case $state in
        command)
            local -a cmds
            cmds=(
)SH";
    for (const auto& c : commands()) {
        out << "                " << zsh_quote(std::string(c.name) + ":" + std::string(c.summary)) << "\n";
    }
    out << R"SH(            )
            _describe -t commands 'passthru command' cmds && ret=0
            ;;
        argument)
            # --root given before the command, for the value completions.
            local _passthru_root=${opt_args[--root]:-/}
            curcontext=${curcontext%:*:*}:passthru-$words[1]:
            case $words[1] in
)SH";
    out << zsh_command_cases(after_command);
    out << R"SH(            esac
            ;;
    esac
    return ret
}

_passthru "$@"
)SH";
    std::cout << out.str();
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 5 && args[0] == "man") {
        return render_man(args[1], args[2], args[3], args[4]);
    }
    if (args.size() == 1 && args[0] == "bash") {
        return render_bash();
    }
    if (args.size() == 1 && args[0] == "zsh") {
        return render_zsh();
    }
    std::fputs("usage: passthru_docgen man TEMPLATE VERSION DATE SCAN | bash | zsh\n", stderr);
    return 2;
}
