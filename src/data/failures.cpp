// SPDX-License-Identifier: GPL-2.0-or-later
#include "data/failures.hpp"

#include <algorithm>
#include <array>
#include <set>

#include "data/schema.hpp"
#include "util/lex.hpp"

namespace passthru::data {

namespace lex = util::lex;

std::string_view to_string(LogKind kind)
{
    switch (kind) {
    case LogKind::task_log:
        return "task_log";
    case LogKind::kernel_log:
        return "kernel_log";
    }
    return "task_log";
}

namespace {

constexpr std::string_view k_failures_schema = "passthru.failures/1";

constexpr std::array<std::string_view, 8> k_row_fields = {"id",      "cause",  "fix",  "plan_option", "plan_option_when",
                                                          "pattern", "source", "where"};

// A required string of a row, one line long ("failures[2].cause must be one line").
std::string line_text(const Field& field)
{
    auto text = field.nonempty_string();
    if (text.find('\n') != std::string::npos) {
        field.fail("must be one line");
    }
    return text;
}

// Every {name} of the text of `field` names a capture of the pattern or a host fact.
std::string placeholder_text(const Field& field, const std::vector<std::string>& captures)
{
    auto text = line_text(field);
    for (std::size_t open = text.find('{'); open != std::string::npos; open = text.find('{', open + 1)) {
        const auto close = text.find('}', open);
        if (close == std::string::npos) {
            field.fail("has an unclosed '{'");
        }
        const std::string name = text.substr(open + 1, close - open - 1);
        const bool known =
            std::find(captures.begin(), captures.end(), name) != captures.end()
            || std::find(std::begin(k_host_placeholders), std::end(k_host_placeholders), name) != std::end(k_host_placeholders);
        if (!known) {
            throw SchemaError(field.path() + ": {" + name + "} is neither a capture of the pattern nor a host fact");
        }
    }
    return text;
}

LogKind log_kind(const Field& field)
{
    const auto text = line_text(field);
    if (text == "task_log") {
        return LogKind::task_log;
    }
    if (text != "kernel_log") {
        field.fail("must be task_log or kernel_log");
    }
    return LogKind::kernel_log;
}

// plan_option (a string, null or absent) and plan_option_when (always by default).
void read_plan_option(const Field& row, FailureRow& sig)
{
    if (const auto option = row["plan_option"]; option.present() && !option.is_null()) {
        if (!option.is_string()) {
            option.expected("a string or null");
        }
        sig.plan_option = option.string();
    }
    if (const auto when = row["plan_option_when"]; when.present()) {
        const auto text = when.string();
        if (text == "other_devices_in_group") {
            sig.plan_option_when = OptionWhen::other_devices_in_group;
        } else if (text != "always") {
            when.fail("must be always or other_devices_in_group");
        }
    }
}

FailureRow parse_row(const Field& row, const PatternCheck& check)
{
    row.only_fields(k_row_fields, "a failure");
    FailureRow sig;
    sig.id = line_text(row["id"]);
    if (!lex::all_of(sig.id, [](char c) { return lex::is_lower(c) || lex::is_digit(c) || c == '-'; })) {
        row["id"].fail("must be lower-case letters, digits and '-'");
    }
    sig.where = log_kind(row["where"]);
    sig.pattern = line_text(row["pattern"]);
    const auto captures = check(sig.pattern);
    if (!captures) {
        throw SchemaError(row["pattern"].path() + ": " + captures.error().what());
    }
    sig.cause = placeholder_text(row["cause"], *captures);
    sig.fix = placeholder_text(row["fix"], *captures);
    read_plan_option(row, sig);
    sig.source = line_text(row["source"]);
    return sig;
}

std::vector<FailureRow> failures_from(const Field& doc, const PatternCheck& check)
{
    doc.only_fields({"schema", "comment", "failures"}, k_failures_schema);
    const auto rows = doc["failures"];
    if (rows.size() == 0) {
        rows.fail("must be a non-empty array");
    }
    std::vector<FailureRow> out;
    std::set<std::string> ids;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        auto sig = parse_row(rows[i], check);
        if (!ids.insert(sig.id).second) {
            throw SchemaError(rows[i]["id"].path() + ": " + sig.id + " is used twice");
        }
        out.push_back(std::move(sig));
    }
    return out;
}

} // namespace

Result<std::vector<FailureRow>> parse_failures(std::string_view json_text, const std::string& where, const PatternCheck& check)
{
    return load<std::vector<FailureRow>>(json_text, where, k_failures_schema, [&](const Field& doc) { return failures_from(doc, check); });
}

Result<std::vector<FailureRow>> load_failures(const DataDir& data, const PatternCheck& check)
{
    return data.load_profile("failures.json",
                             [&](std::string_view text, const std::string& where) { return parse_failures(text, where, check); });
}

} // namespace passthru::data
