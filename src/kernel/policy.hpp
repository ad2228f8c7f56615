// SPDX-License-Identifier: GPL-2.0-or-later
// /etc/passthru/kernel.conf: what the kernel hook (helpers/kernel-postinst, which runs
// 'passthru kernel check --hook KVER' when a kernel package is installed) does when the new
// kernel would break passthrough (README: Kernel updates). Lines "key = value"; '#' starts a
// comment. Keys:
//   on-break = warn | pin   warn (the default): print the verdict only; pin: also pin the
//                           last good kernel (the running one, when its own check passes)
//                           through 'passthru kernel pin', as one journaled generation
#pragma once

#include <string>
#include <string_view>

#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::kernel {

inline constexpr std::string_view k_policy_file = "/etc/passthru/kernel.conf";

enum class OnBreak
{
    warn,
    pin,
};

struct KernelPolicy
{
    OnBreak on_break = OnBreak::warn;
};

// The policy in `text`; Errc::parse naming the line for an unknown key or value.
Result<KernelPolicy> parse_policy(std::string_view text);
// The policy of the host: the defaults when the file does not exist.
Result<KernelPolicy> load_policy(const util::HostFs& fs);

} // namespace passthru::kernel
