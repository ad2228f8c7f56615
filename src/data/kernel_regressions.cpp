// SPDX-License-Identifier: GPL-2.0-or-later
#include "data/kernel_regressions.hpp"

#include <algorithm>
#include <charconv>

#include "data/schema.hpp"

namespace passthru::data {

namespace {

constexpr std::string_view k_regressions_schema = "passthru.kernel-regressions/1";
constexpr std::size_t k_max_numbers = 8;

bool all_digits(std::string_view word)
{
    return !word.empty() && std::all_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "6.8.12-12": numbers joined by '.' or '-', nothing else.
std::optional<ReleaseNumbers> range_bound(const Field& field)
{
    const std::string text = field.nonempty_string();
    const auto numbers = release_numbers(text);
    if (!numbers || text.find_first_not_of("0123456789.-") != std::string::npos || text.back() == '.' || text.back() == '-') {
        field.fail("must be a kernel release of numbers joined by '.' or '-' (e.g. \"6.8.12-12\")");
    }
    return numbers;
}

std::uint16_t vendor_id(const Field& field)
{
    const std::string text = field.nonempty_string();
    std::uint16_t value = 0;
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value, 16);
    if (text.size() != 4 || ec != std::errc() || ptr != end) {
        field.fail("must be a PCI vendor id of four hex digits (e.g. \"1002\")");
    }
    return value;
}

KernelRegressions parse_rows(const Field& doc)
{
    doc.only_fields({"schema", "comment", "regressions"}, k_regressions_schema);
    const auto rows = doc["regressions"];
    KernelRegressions out;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto row = rows[i];
        row.object();
        row.only_fields({"id", "from", "fixed", "flavour", "vendor", "symptom", "fix", "sources"}, "a kernel regression", {"comment"});
        KernelRegression r;
        r.id = row["id"].one_line();
        r.from = *range_bound(row["from"]);
        r.from_text = row["from"].string();
        if (row.has("fixed")) {
            r.fixed = range_bound(row["fixed"]);
            r.fixed_text = row["fixed"].string();
            if (compare_releases(*r.fixed, r.from) <= 0) {
                row["fixed"].fail("must be a later release than from");
            }
        }
        if (row.has("flavour")) {
            r.flavour = row["flavour"].one_line();
            if (r.flavour->find_first_of(" -/") != std::string::npos) {
                row["flavour"].fail("must be one word without '-' (e.g. \"pve\")");
            }
        }
        if (row.has("vendor")) {
            r.vendor = vendor_id(row["vendor"]);
        }
        r.symptom = row["symptom"].one_line();
        r.fix = row["fix"].one_line();
        const auto sources = row["sources"];
        if (sources.size() == 0) {
            sources.fail("must name at least one source");
        }
        for (std::size_t s = 0; s < sources.size(); ++s) {
            r.sources.push_back(sources[s].one_line());
        }
        const bool seen = std::any_of(out.rows.begin(), out.rows.end(), [&](const KernelRegression& o) { return o.id == r.id; });
        if (seen) {
            row["id"].fail("is the id of an earlier regression");
        }
        out.rows.push_back(std::move(r));
    }
    return out;
}

} // namespace

std::optional<ReleaseNumbers> release_numbers(std::string_view release)
{
    ReleaseNumbers out;
    std::size_t pos = 0;
    while (pos <= release.size() && out.size() < k_max_numbers) {
        const auto end = release.find_first_of(".-", pos);
        const auto word = release.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
        if (!all_digits(word) || word.size() > 9) {
            break;
        }
        std::uint32_t value = 0;
        std::from_chars(word.data(), word.data() + word.size(), value);
        out.push_back(value);
        if (end == std::string_view::npos) {
            break;
        }
        pos = end + 1;
    }
    if (out.empty()) {
        return std::nullopt;
    }
    return out;
}

int compare_releases(const ReleaseNumbers& a, const ReleaseNumbers& b)
{
    const std::size_t n = std::max(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t x = i < a.size() ? a[i] : 0;
        const std::uint32_t y = i < b.size() ? b[i] : 0;
        if (x != y) {
            return x < y ? -1 : 1;
        }
    }
    return 0;
}

bool KernelRegression::covers(std::string_view release) const
{
    const auto numbers = release_numbers(release);
    if (!numbers) {
        return false;
    }
    if (flavour) {
        const std::string suffix = "-" + *flavour;
        if (release.size() <= suffix.size() || release.substr(release.size() - suffix.size()) != suffix) {
            return false;
        }
    }
    return compare_releases(*numbers, from) >= 0 && (!fixed || compare_releases(*numbers, *fixed) < 0);
}

Result<KernelRegressions> parse_kernel_regressions(std::string_view json_text, const std::string& where)
{
    return load<KernelRegressions>(json_text, where, k_regressions_schema, parse_rows);
}

Result<KernelRegressions> load_kernel_regressions(const DataDir& data)
{
    return data.load_profile("host/kernel-regressions.json", parse_kernel_regressions);
}

} // namespace passthru::data
