// SPDX-License-Identifier: GPL-2.0-or-later
// The known failures of a VM start (profiles/failures.json, read by
// data/failures.*) with their patterns compiled. Patterns are bounded matchers
// (util/lex.hpp): literal text, `*` for any run, `{name:class}` captures; never
// std::regex.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/failures.hpp"
#include "util/error.hpp"

namespace passthru::explain {

using data::LogKind;
using data::OptionWhen;
using data::to_string;

// What a capture takes: the longest run of its class at that place.
enum class CaptureClass
{
    num,     // decimal digits
    hex,     // hex digits, either case
    pci,     // 0000:01:00.0 or 01:00.0 (captured as 0000:01:00.0, lower case)
    word,    // a run without white space and quotes (' ")
    bracket, // "[" up to the next "]", both kept
    version, // a digit, then digits, '.' and '-' ("550.163.01", "185.18-36")
};

// A compiled pattern: literal runs, gaps (`*`) and captures.
class Pattern
{
public:
    // Errc::usage with the reason when `text` is not a pattern: an unknown
    // class, an unclosed "{", a capture name used twice, fewer than 8
    // literal characters (a pattern that would match nearly anything).
    static Result<Pattern> compile(std::string_view text);

    // The captures when the pattern occurs anywhere in `line`. Each segment
    // between gaps is found at its leftmost place after the previous one, so
    // the work is bounded by the line's length times the pattern's.
    std::optional<std::map<std::string, std::string>> match(std::string_view line) const;

    const std::vector<std::string>& capture_names() const noexcept { return m_names; }
    const std::string& text() const noexcept { return m_text; }

    struct Token
    {
        bool capture = false;
        std::string literal; // the text of a literal token
        std::string name;    // the name of a capture
        CaptureClass cls = CaptureClass::word;
    };

private:
    std::string m_text;
    std::vector<std::vector<Token>> m_segments; // split at `*`
    std::vector<std::string> m_names;
    std::string m_longest_literal; // every match holds it: the first test of a line
};

// One row of profiles/failures.json, its pattern compiled.
struct Signature
{
    std::string id;
    LogKind where = LogKind::task_log;
    Pattern pattern;
    std::string cause; // may hold {placeholders} (a capture or a host fact)
    std::string fix;
    // Present: `passthru plan --vm VMID --gpus SLOTS` fixes it, with this
    // option added ("" for none); absent: the fix is a manual step.
    std::optional<std::string> plan_option;
    // When plan_option is added: always, or only when the device's IOMMU group holds a
    // device that is neither a bridge nor a function of a card the VM passes (then only
    // splitting the group helps; otherwise the plan with the card binds its functions).
    OptionWhen plan_option_when = OptionWhen::always;
    std::string source; // the source file and function that emit the message
};

using data::k_host_placeholders;

// The capture names of a pattern, or why it is none (Pattern::compile's
// error): the check data::load_failures runs on each row's pattern.
Result<std::vector<std::string>> pattern_captures(std::string_view text);
// The rows of data::load_failures, each pattern compiled (pattern_captures
// passed it already).
std::vector<Signature> signatures(const std::vector<data::FailureRow>& rows);
// data::parse_failures with pattern_captures, then signatures(): the text of a
// profiles/failures.json (schema passthru.failures/1). Errc::usage naming
// `where` and the row when it breaks the schema.
Result<std::vector<Signature>> parse_signatures(std::string_view json_text, const std::string& where);

// `text` with every {name} replaced by its value in `values`; a name
// without a value stays as written.
std::string fill_placeholders(std::string_view text, const std::map<std::string, std::string>& values);

} // namespace passthru::explain
