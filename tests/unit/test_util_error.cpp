// SPDX-License-Identifier: GPL-2.0-or-later
// util/error: the one error type, its exit codes, and PASSTHRU_TRY /
// PASSTHRU_TRY_ASSIGN, which hand an error up unchanged.
#include <doctest/doctest.h>

#include <string>

#include "util/error.hpp"

using namespace passthru;

namespace {

int g_try_steps = 0;

Result<int> try_number(bool ok)
{
    ++g_try_steps;
    if (!ok) {
        return tl::unexpected(Error(Errc::not_found, "no number").with_hint("give one"));
    }
    return 41;
}

Result<void> try_check(bool ok)
{
    ++g_try_steps;
    if (!ok) {
        return fail(Errc::precondition, "refused");
    }
    return {};
}

// Both macros in one function: the error of the first failing step, nothing after it.
Result<std::string> try_both(bool number_ok, bool check_ok)
{
    PASSTHRU_TRY_ASSIGN(const int n, try_number(number_ok));
    PASSTHRU_TRY(try_check(check_ok));
    int again = 0;
    PASSTHRU_TRY_ASSIGN(again, try_number(true));
    return std::to_string(n + again);
}

Result<void> try_void(bool ok)
{
    PASSTHRU_TRY(try_check(ok));
    PASSTHRU_TRY(try_check(true));
    return {};
}

} // namespace

TEST_SUITE("util::error")
{
    TEST_CASE("PASSTHRU_TRY_ASSIGN and PASSTHRU_TRY: the value on success")
    {
        g_try_steps = 0;
        const auto r = try_both(true, true);
        REQUIRE(r);
        CHECK(*r == "82");
        CHECK(g_try_steps == 3);
        CHECK(try_void(true));
    }

    TEST_CASE("the first error is returned unchanged, and nothing after it runs")
    {
        g_try_steps = 0;
        const auto first = try_both(false, true);
        REQUIRE_FALSE(first);
        CHECK(first.error().code() == Errc::not_found);
        CHECK(std::string(first.error().what()) == "no number");
        CHECK(first.error().hints() == std::vector<std::string>{"give one"});
        CHECK(g_try_steps == 1);

        g_try_steps = 0;
        const auto second = try_both(true, false);
        REQUIRE_FALSE(second);
        CHECK(second.error().code() == Errc::precondition);
        CHECK(g_try_steps == 2);

        const auto v = try_void(false);
        REQUIRE_FALSE(v);
        CHECK(std::string(v.error().what()) == "refused");
    }

    TEST_CASE("exit codes")
    {
        CHECK(exit_code_for(Errc::usage) == exit_code::usage);
        CHECK(exit_code_for(Errc::precondition) == exit_code::refused);
        CHECK(exit_code_for(Errc::rollback_failed) == exit_code::rollback_failed);
        CHECK(exit_code_for(Errc::internal) == exit_code::internal);
        CHECK(exit_code_for(Errc::io) == exit_code::error);
    }
}
