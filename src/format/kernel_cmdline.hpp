// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace passthru::format {

// A kernel command line split the way the kernel's next_arg() does:
// white-space separated, double quotes group spaces ("a=\"b c\"").
class KernelCmdline
{
public:
    explicit KernelCmdline(std::string_view text);

    const std::vector<std::string>& tokens() const noexcept { return m_tokens; }
    // Key of a token: the part before '=' ("vfio-pci.ids=..." -> "vfio-pci.ids"),
    // with '-' and '_' treated alike in the module-name part, as the kernel does.
    static std::string key_of(std::string_view token);
    bool has_key(std::string_view key) const;
    // Value of the last token with this key ("" for a bare flag).
    std::optional<std::string> value(std::string_view key) const;
    bool has_token(std::string_view token) const;
    // Removes every token with the key; returns the removed tokens.
    std::vector<std::string> remove_key(std::string_view key);
    // Replaces tokens with the same key (keeping the first position) or appends.
    void set(std::string_view token);
    std::string str() const;

private:
    std::vector<std::string> m_tokens;
};

} // namespace passthru::format
