// SPDX-License-Identifier: GPL-2.0-or-later
// The kernel hook's policy file (kernel/policy.hpp).
#include "kernel/policy.hpp"

#include "util/strings.hpp"

namespace passthru::kernel {

Result<KernelPolicy> parse_policy(std::string_view text)
{
    KernelPolicy policy;
    int lineno = 0;
    for (const auto& raw : util::split_lines(text)) {
        ++lineno;
        std::string_view line = raw;
        if (const auto hash = line.find('#'); hash != std::string_view::npos) {
            line = line.substr(0, hash);
        }
        line = util::trim(line);
        if (line.empty()) {
            continue;
        }
        const std::string where = std::string(k_policy_file) + " line " + std::to_string(lineno);
        const auto eq = line.find('=');
        if (eq == std::string_view::npos) {
            return fail(Errc::parse, where + ": not 'key = value'");
        }
        const auto key = util::trim(line.substr(0, eq));
        const auto value = util::trim(line.substr(eq + 1));
        if (key != "on-break") {
            return fail(Errc::parse, where + ": unknown key '" + std::string(key).substr(0, 40) + "' (known: on-break)");
        }
        if (value == "warn") {
            policy.on_break = OnBreak::warn;
        } else if (value == "pin") {
            policy.on_break = OnBreak::pin;
        } else {
            return fail(Errc::parse, where + ": on-break must be warn or pin, not '" + std::string(value).substr(0, 40) + "'");
        }
    }
    return policy;
}

Result<KernelPolicy> load_policy(const util::HostFs& fs)
{
    if (!fs.exists(k_policy_file)) {
        return KernelPolicy{};
    }
    auto text = fs.read_file(k_policy_file);
    if (!text) {
        return tl::unexpected(text.error());
    }
    return parse_policy(*text);
}

} // namespace passthru::kernel
