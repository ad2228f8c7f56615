// SPDX-License-Identifier: GPL-2.0-or-later
#include "explain/signature.hpp"

#include <algorithm>

#include "util/lex.hpp"

namespace passthru::explain {

namespace lex = util::lex;

namespace {

constexpr std::size_t k_min_literal = 8;

bool is_xdigit_any(char c)
{
    return lex::is_xdigit_lower(c) || (c >= 'A' && c <= 'F');
}

std::optional<CaptureClass> capture_class(std::string_view name)
{
    if (name == "num") {
        return CaptureClass::num;
    }
    if (name == "hex") {
        return CaptureClass::hex;
    }
    if (name == "pci") {
        return CaptureClass::pci;
    }
    if (name == "word") {
        return CaptureClass::word;
    }
    if (name == "bracket") {
        return CaptureClass::bracket;
    }
    if (name == "version") {
        return CaptureClass::version;
    }
    return std::nullopt;
}

// Hex digits of exactly `n` at `pos`, then `sep` (when not '\0').
bool hex_field(std::string_view s, std::size_t pos, std::size_t n, char sep)
{
    if (pos + n + (sep != '\0' ? 1 : 0) > s.size() || lex::span(s, pos, is_xdigit_any) < n) {
        return false;
    }
    return sep == '\0' || s[pos + n] == sep;
}

// Length of a PCI address at `pos` (12 for DDDD:BB:DD.F, 7 for BB:DD.F); 0 when none.
std::size_t pci_span(std::string_view s, std::size_t pos)
{
    const auto bdf = [&](std::size_t at) {
        return hex_field(s, at, 2, ':') && hex_field(s, at + 3, 2, '.') && at + 6 < s.size() && s[at + 6] >= '0' && s[at + 6] <= '7';
    };
    if (hex_field(s, pos, 4, ':') && bdf(pos + 5)) {
        return 12;
    }
    return bdf(pos) ? 7 : 0;
}

std::size_t class_span(CaptureClass cls, std::string_view s, std::size_t pos)
{
    switch (cls) {
    case CaptureClass::num:
        return lex::span(s, pos, lex::is_digit);
    case CaptureClass::hex:
        return lex::span(s, pos, is_xdigit_any);
    case CaptureClass::pci:
        return pci_span(s, pos);
    case CaptureClass::word:
        return lex::span(s, pos, [](char c) { return !lex::is_space(c) && c != '\'' && c != '"'; });
    case CaptureClass::version:
        return pos < s.size() && lex::is_digit(s[pos]) ? lex::span(s, pos, [](char c) { return lex::is_digit(c) || c == '.' || c == '-'; })
                                                       : 0;
    case CaptureClass::bracket: {
        if (pos >= s.size() || s[pos] != '[') {
            return 0;
        }
        const auto close = s.find(']', pos);
        return close == std::string_view::npos ? 0 : close - pos + 1;
    }
    }
    return 0;
}

std::string capture_value(CaptureClass cls, std::string_view text)
{
    std::string out(text);
    if (cls == CaptureClass::pci) {
        std::transform(out.begin(), out.end(), out.begin(),
                       [](char c) { return (c >= 'A' && c <= 'F') ? static_cast<char>(c - 'A' + 'a') : c; });
        if (out.size() == 7) {
            out.insert(0, "0000:");
        }
    }
    return out;
}

// What one segment's scan of a line has learnt of a capture token's runs, so that trying
// the segment at every position of the line costs each token the line's length once, not
// once per position: every start inside a run of a class ends where the run ends, and
// every '[' before the first ']' after it closes at that ']'.
struct SpanMemo
{
    std::size_t from = std::string_view::npos; // the run (or the search for ']') started here
    std::size_t end = 0;                       // and ends here: past the run, or the ']' (npos: none)
};

std::size_t memo_span(CaptureClass cls, std::string_view s, std::size_t pos, SpanMemo& memo)
{
    constexpr auto none = std::string_view::npos;
    if (cls == CaptureClass::pci) {
        return pci_span(s, pos); // at most 12 characters looked at
    }
    if (cls == CaptureClass::bracket) {
        if (pos >= s.size() || s[pos] != '[') {
            return 0;
        }
        if (memo.from == none || pos < memo.from || (memo.end != none && pos > memo.end)) {
            memo.from = pos;
            memo.end = s.find(']', pos);
        }
        return memo.end == none ? 0 : memo.end - pos + 1;
    }
    if (memo.from != none && pos >= memo.from && pos < memo.end) {
        return memo.end - pos;
    }
    const std::size_t n = class_span(cls, s, pos);
    if (n > 0) {
        memo.from = pos;
        memo.end = pos + n;
    }
    return n;
}

// The tokens of a segment at `pos`: the end, each capture's text in `found` (by token);
// nullopt when they do not match there. Nothing is copied until the segment matches.
std::optional<std::size_t> match_at(const std::vector<Pattern::Token>& tokens, std::string_view line, std::size_t pos,
                                    std::vector<SpanMemo>& memos, std::vector<std::string_view>& found)
{
    for (std::size_t k = 0; k < tokens.size(); ++k) {
        const auto& t = tokens[k];
        if (!t.capture) {
            if (line.substr(pos).starts_with(t.literal)) {
                pos += t.literal.size();
                continue;
            }
            return std::nullopt;
        }
        const std::size_t n = memo_span(t.cls, line, pos, memos[k]);
        if (n == 0) {
            return std::nullopt;
        }
        found[k] = line.substr(pos, n);
        pos += n;
    }
    return pos;
}

// Appends the text before a "{" (and the capture from it) to `segment`; the position after it.
Result<std::size_t> compile_capture(std::string_view text, std::size_t open, std::vector<Pattern::Token>& segment,
                                    std::vector<std::string>& names)
{
    const auto close = text.find('}', open);
    if (close == std::string_view::npos) {
        return fail(Errc::usage, "unclosed '{' in pattern '" + std::string(text) + "'");
    }
    const std::string_view inside = text.substr(open + 1, close - open - 1);
    const auto colon = inside.find(':');
    const std::string_view name = inside.substr(0, colon);
    const auto cls = colon == std::string_view::npos ? std::nullopt : capture_class(inside.substr(colon + 1));
    if (!cls || !lex::all_of(name, [](char c) { return lex::is_lower(c) || c == '_'; })) {
        return fail(Errc::usage, "'{" + std::string(inside) + "}' in pattern '" + std::string(text)
                                     + "': write {name:class}, class one of num, hex, pci, word, bracket, version");
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
        return fail(Errc::usage, "capture '" + std::string(name) + "' is named twice in pattern '" + std::string(text) + "'");
    }
    names.emplace_back(name);
    segment.push_back(Pattern::Token{true, {}, std::string(name), *cls});
    return close + 1;
}

} // namespace

Result<Pattern> Pattern::compile(std::string_view text)
{
    Pattern out;
    out.m_text = std::string(text);
    std::vector<Token> segment;
    std::size_t literal_chars = 0;
    std::string literal;
    const auto flush_literal = [&] {
        if (!literal.empty()) {
            literal_chars += literal.size();
            segment.push_back(Token{false, literal, {}, CaptureClass::word});
            literal.clear();
        }
    };
    for (std::size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (c == '*') {
            flush_literal();
            if (!segment.empty()) {
                out.m_segments.push_back(std::move(segment));
                segment.clear();
            }
            ++i;
        } else if (c == '{') {
            flush_literal();
            auto next = compile_capture(text, i, segment, out.m_names);
            if (!next) {
                return tl::unexpected(next.error());
            }
            i = *next;
        } else if (c == '}') {
            return fail(Errc::usage, "'}' without '{' in pattern '" + std::string(text) + "'");
        } else {
            literal.push_back(c);
            ++i;
        }
    }
    flush_literal();
    if (!segment.empty()) {
        out.m_segments.push_back(std::move(segment));
    }
    for (const auto& seg : out.m_segments) {
        for (const auto& t : seg) {
            if (!t.capture && t.literal.size() > out.m_longest_literal.size()) {
                out.m_longest_literal = t.literal;
            }
        }
    }
    if (literal_chars < k_min_literal) {
        return fail(Errc::usage, "pattern '" + std::string(text) + "' has fewer than " + std::to_string(k_min_literal)
                                     + " literal characters: it would match nearly any line");
    }
    return out;
}

std::optional<std::map<std::string, std::string>> Pattern::match(std::string_view line) const
{
    if (line.find(m_longest_literal) == std::string_view::npos) {
        return std::nullopt; // the cheap test that leaves most lines of a kernel log at once
    }
    std::map<std::string, std::string> captures;
    std::size_t from = 0;
    for (const auto& segment : m_segments) {
        std::vector<SpanMemo> memos(segment.size());
        std::vector<std::string_view> found(segment.size());
        std::optional<std::size_t> end;
        for (std::size_t pos = from; pos < line.size() && !end; ++pos) {
            end = match_at(segment, line, pos, memos, found);
        }
        if (!end) {
            return std::nullopt;
        }
        for (std::size_t k = 0; k < segment.size(); ++k) {
            if (segment[k].capture) {
                captures[segment[k].name] = capture_value(segment[k].cls, found[k]);
            }
        }
        from = *end;
    }
    return captures;
}

std::string fill_placeholders(std::string_view text, const std::map<std::string, std::string>& values)
{
    std::string out;
    std::size_t i = 0;
    while (i < text.size()) {
        const auto open = text.find('{', i);
        const auto close = open == std::string_view::npos ? open : text.find('}', open);
        if (close == std::string_view::npos) {
            out.append(text.substr(i));
            break;
        }
        out.append(text.substr(i, open - i));
        const auto it = values.find(std::string(text.substr(open + 1, close - open - 1)));
        out.append(it != values.end() ? std::string_view(it->second) : text.substr(open, close - open + 1));
        i = close + 1;
    }
    return out;
}

Result<std::vector<std::string>> pattern_captures(std::string_view text)
{
    auto pattern = Pattern::compile(text);
    if (!pattern) {
        return tl::unexpected(pattern.error());
    }
    return pattern->capture_names();
}

std::vector<Signature> signatures(const std::vector<data::FailureRow>& rows)
{
    std::vector<Signature> out;
    out.reserve(rows.size());
    for (const auto& row : rows) {
        auto pattern = Pattern::compile(row.pattern);
        if (!pattern) {
            throw pattern.error(); // the loader checked each pattern with pattern_captures
        }
        out.push_back(Signature{.id = row.id,
                                .where = row.where,
                                .pattern = std::move(*pattern),
                                .cause = row.cause,
                                .fix = row.fix,
                                .plan_option = row.plan_option,
                                .plan_option_when = row.plan_option_when,
                                .source = row.source});
    }
    return out;
}

Result<std::vector<Signature>> parse_signatures(std::string_view json_text, const std::string& where)
{
    auto rows = data::parse_failures(json_text, where, pattern_captures);
    if (!rows) {
        return tl::unexpected(rows.error());
    }
    return signatures(*rows);
}

} // namespace passthru::explain
