// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/plan_render.hpp"
#include "cli/global_words.hpp"
#include "cli/request_options.hpp"

#include <optional>
#include <utility>

#include "plan/plan_json.hpp"
#include "util/command_runner.hpp"
#include "util/diff.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"
#include "util/term.hpp"

namespace passthru::cli {

namespace {

using util::heading;
using util::Style;
using util::styled;

std::string colour_diff(const std::string& diff, bool color)
{
    if (!color) {
        return diff;
    }
    std::string out;
    for (const auto& line : util::split_lines(diff)) {
        if (line.rfind("+++", 0) == 0 || line.rfind("---", 0) == 0) {
            out += styled(line, Style::bold, color);
        } else if (!line.empty() && line[0] == '+') {
            out += styled(line, Style::green, color);
        } else if (!line.empty() && line[0] == '-') {
            out += styled(line, Style::red, color);
        } else if (line.rfind("@@", 0) == 0) {
            out += styled(line, Style::cyan, color);
        } else {
            out += line;
        }
        out += "\n";
    }
    return out;
}

} // namespace

std::string render_plan_diffs(const plan::Plan& plan)
{
    std::string out;
    for (const auto& f : plan.files) {
        if (f.binary) {
            // Bytes have no diff: the sizes and checksums say what changes.
            const auto side = [](const std::optional<std::string>& v) {
                return v ? std::to_string(v->size()) + " bytes, sha256 " + util::sha256_hex(*v) : std::string("absent");
            };
            out += "--- " + f.path + " (binary: " + side(f.before) + ")\n+++ " + f.path + " (binary: " + side(f.after) + ")\n";
            continue;
        }
        out += util::unified_diff(f.before, f.after, f.path);
    }
    return out;
}

namespace {

// The request: which GPUs, how they are bound, the kernel arguments.
std::string render_summary(const plan::Plan& plan, bool color)
{
    std::string out;
    std::string title = "Plan for VM " + plan.request.vm;
    std::vector<std::string> cts;
    cts.reserve(plan.request.containers.size());
    for (const auto& c : plan.request.containers) {
        cts.push_back(c.ct + " (--gpus " + c.gpus + ")");
    }
    const std::string ct_title = (cts.size() == 1 ? "container " : "containers ") + util::join(cts, ", ");
    if (plan.request.kernel) {
        title = plan.request.kernel->action == plan::KernelAction::pin ? "Plan to pin kernel " + plan.request.kernel->release
                                                                       : std::string("Plan to unpin the kernel");
    } else if (!cts.empty()) {
        title = plan.request.vm.empty() ? "Plan for " + ct_title : title + " and " + ct_title;
    } else if (plan.request.vm.empty()) {
        title = plan.request.node_scans.empty() ? std::string("Plan for the host network")
                                                : "Plan for the cluster mapping " + plan.request.mapping.value_or("");
    }
    out += styled(title, Style::bold, color) + "\n";
    for (const auto& ns : plan.request.node_scans) {
        out += "  node " + ns.node + "  scan " + ns.file + "\n";
    }
    for (const auto& g : plan.gpus) {
        out += "  GPU " + g.slot + (g.name.empty() ? "" : "  " + g.name) + "  functions " + util::join(g.functions, " ");
        if (!g.iommu_groups.empty()) {
            std::vector<std::string> groups;
            groups.reserve(g.iommu_groups.size());
            for (int n : g.iommu_groups) {
                groups.push_back(std::to_string(n));
            }
            out += "  group " + util::join(groups, ",");
        }
        out += g.boot_vga ? "  [boot VGA]\n" : "\n";
    }
    for (const auto& sw : plan.nvswitches) {
        std::vector<std::string> groups;
        groups.reserve(sw.iommu_groups.size());
        for (int n : sw.iommu_groups) {
            groups.push_back(std::to_string(n));
        }
        out += "  NVSwitch " + sw.slot + (sw.name.empty() ? "" : "  " + sw.name) + "  functions " + util::join(sw.functions, " ")
               + (groups.empty() ? "" : "  group " + util::join(groups, ",")) + "\n";
    }
    if (!plan.binding.empty() && !plan.refused()) {
        out += "  binding: " + plan.binding + (plan.vfio_ids.empty() ? "" : "  ids " + util::join(plan.vfio_ids, ",")) + "\n";
    }
    if (!plan.kernel_args.add.empty() || !plan.kernel_args.remove.empty()) {
        out += "  kernel command line:";
        for (const auto& a : plan.kernel_args.add) {
            out += " +" + a;
        }
        for (const auto& r : plan.kernel_args.remove) {
            out += " -" + r;
        }
        out += "\n";
    }
    return out;
}

std::string render_refusals(const plan::Plan& plan, bool color)
{
    if (!plan.refused()) {
        return {};
    }
    std::string out = heading("Refused: nothing is planned", Style::red, color) + "\n";
    for (const auto& r : plan.refusals) {
        out += "  " + styled("refused:", Style::red, color) + " " + with_global_words(r.message) + "\n";
        for (const auto& h : r.hints) {
            out += "    hint: " + with_global_words(h) + "\n";
        }
    }
    return out;
}

// Files with their reasons, the diffs, and libvirt domains with theirs.
std::string render_changes(const plan::Plan& plan, const RenderOptions& options)
{
    const bool color = options.color;
    std::string out;
    if (!plan.files.empty()) {
        out += heading("Files", Style::bold, color) + "\n";
        for (const auto& f : plan.files) {
            out += "  "
                   + styled(std::string(plan::to_string(f.action)), f.action == plan::FileAction::remove ? Style::red : Style::green, color)
                   + " " + f.path + "\n";
            for (const auto& r : f.reasons) {
                out += "    - " + r + "\n";
            }
        }
    }
    if (options.show_diffs && !plan.files.empty()) {
        out += heading("Diffs", Style::bold, color) + "\n";
        out += colour_diff(render_plan_diffs(plan), color);
    }
    for (const auto& d : plan.domains) {
        out += heading("libvirt domain " + d.name + " (" + d.uri + ")", Style::bold, color) + "\n";
        for (const auto& r : d.reasons) {
            out += "    - " + r + "\n";
        }
        out += colour_diff(util::unified_diff(d.before_xml, d.after_xml, "domain " + d.name), color);
    }
    return out;
}

// The longest top-level "(...)" group of TEXT with the space before it: [begin, end); nullopt when none.
std::optional<std::pair<std::size_t, std::size_t>> longest_group(const std::string& text)
{
    std::optional<std::pair<std::size_t, std::size_t>> best;
    std::size_t depth = 0;
    std::size_t open = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '(') {
            if (depth++ == 0) {
                open = i;
            }
        } else if (text[i] == ')' && depth > 0 && --depth == 0) {
            const std::size_t begin = open > 0 && text[open - 1] == ' ' ? open - 1 : open;
            if (!best || i + 1 - begin > best->second - best->first) {
                best = std::make_pair(begin, i + 1);
            }
        }
    }
    return best;
}

} // namespace

std::string shown_note(const std::string& note, bool verbose)
{
    if (verbose || note.size() <= k_note_length) {
        return note;
    }
    std::string out = note;
    while (out.size() > k_note_length) {
        const auto group = longest_group(out);
        if (!group) {
            break;
        }
        out.erase(group->first, group->second - group->first);
    }
    if (out.size() > k_note_length) {
        const std::size_t cut = out.rfind(' ', k_note_length);
        out = out.substr(0, cut == std::string::npos ? k_note_length : cut) + " ...";
    }
    return out + " (in full: --verbose)";
}

namespace {

// Commands, warnings and notes.
std::string render_steps_and_messages(const plan::Plan& plan, bool color, bool verbose)
{
    std::string out;
    if (!plan.commands.empty()) {
        out += heading("Commands (after the files are written)", Style::bold, color) + "\n";
        for (const auto& c : plan.commands) {
            out += "  " + util::shell_quote(c.argv) + "\n";
            if (!c.reason.empty()) {
                out += "    - " + c.reason + "\n";
            }
        }
    }
    if (!plan.warnings.empty()) {
        out += heading("Warnings", Style::yellow, color) + "\n";
        for (const auto& w : plan.warnings) {
            out += "  " + styled("warning:", Style::yellow, color) + " " + with_global_words(w) + "\n";
        }
    }
    if (!plan.notes.empty()) {
        out += heading("Notes", Style::bold, color) + "\n";
        for (const auto& n : plan.notes) {
            out += "  note: " + shown_note(with_global_words(n), verbose) + "\n";
        }
    }
    return out;
}

} // namespace

std::string apply_step(const plan::Plan& plan, PlanSource source, const std::string& saved_file)
{
    std::string step = "passthru" + global_words() + " apply";
    switch (source) {
    case PlanSource::pending:
        return "Next step: " + step + "  (applies this plan, recorded as the pending plan; it asks first)\n";
    case PlanSource::saved:
        return "Next step: " + step + " --plan " + util::shell_quote({saved_file}) + "  (applies this saved plan; it asks first)\n";
    case PlanSource::request:
        break;
    }
    return "Next step: " + step + " " + request_to_options(plan.request)
           + (plan.request.trial_minutes ? " --trial --trial-minutes " + std::to_string(*plan.request.trial_minutes) : "")
           + "  (plans this request again and applies it; it asks first)\n";
}

std::string render_plan(const plan::Plan& plan, const RenderOptions& options)
{
    std::string out = render_summary(plan, options.color);
    out += render_refusals(plan, options.color);
    out += render_changes(plan, options);
    out += render_steps_and_messages(plan, options.color, options.verbose);
    if (!plan.refused()) {
        out += "\n";
        out += plan.empty() ? "Nothing to change.\n"
                            : std::to_string(plan.files.size()) + " file(s) to change, " + std::to_string(plan.commands.size())
                                  + " command(s) to run.\n";
    }
    return out;
}

} // namespace passthru::cli
