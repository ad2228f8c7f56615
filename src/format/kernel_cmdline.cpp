// SPDX-License-Identifier: GPL-2.0-or-later
#include "format/kernel_cmdline.hpp"

#include <algorithm>

namespace passthru::format {

KernelCmdline::KernelCmdline(std::string_view text)
{
    std::string current;
    bool in_quote = false;
    bool have = false;
    for (char c : text) {
        if (c == '"') {
            in_quote = !in_quote;
            current += c;
            have = true;
            continue;
        }
        if (!in_quote && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
            if (have) {
                m_tokens.push_back(current);
                current.clear();
                have = false;
            }
            continue;
        }
        current += c;
        have = true;
    }
    if (have) {
        m_tokens.push_back(current);
    }
}

std::string KernelCmdline::key_of(std::string_view token)
{
    const auto eq = token.find('=');
    std::string key(token.substr(0, eq));
    // "module.param": dashes and underscores are the same in the module name
    // and in parameter names (kernel/params.c parameq()).
    std::replace(key.begin(), key.end(), '-', '_');
    return key;
}

bool KernelCmdline::has_key(std::string_view key) const
{
    const std::string wanted = key_of(key);
    return std::any_of(m_tokens.begin(), m_tokens.end(), [&](const std::string& t) { return key_of(t) == wanted; });
}

std::optional<std::string> KernelCmdline::value(std::string_view key) const
{
    const std::string wanted = key_of(key);
    std::optional<std::string> out;
    for (const auto& t : m_tokens) {
        if (key_of(t) == wanted) {
            const auto eq = t.find('=');
            out = eq == std::string::npos ? std::string() : t.substr(eq + 1);
        }
    }
    return out;
}

bool KernelCmdline::has_token(std::string_view token) const
{
    return std::find(m_tokens.begin(), m_tokens.end(), token) != m_tokens.end();
}

std::vector<std::string> KernelCmdline::remove_key(std::string_view key)
{
    const std::string wanted = key_of(key);
    std::vector<std::string> removed;
    std::vector<std::string> kept;
    for (auto& t : m_tokens) {
        (key_of(t) == wanted ? removed : kept).push_back(std::move(t));
    }
    m_tokens = std::move(kept);
    return removed;
}

void KernelCmdline::set(std::string_view token)
{
    const std::string wanted = key_of(token);
    bool placed = false;
    std::vector<std::string> out;
    for (auto& t : m_tokens) {
        if (key_of(t) == wanted) {
            if (!placed) {
                out.emplace_back(token);
                placed = true;
            }
            continue;
        }
        out.push_back(std::move(t));
    }
    if (!placed) {
        out.emplace_back(token);
    }
    m_tokens = std::move(out);
}

std::string KernelCmdline::str() const
{
    std::string out;
    for (const auto& t : m_tokens) {
        if (!out.empty()) {
            out += ' ';
        }
        out += t;
    }
    return out;
}

} // namespace passthru::format
