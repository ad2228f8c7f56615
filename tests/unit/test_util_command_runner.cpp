// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>
#include <string>

#include "util/command_runner.hpp"
#include "util/strings.hpp"

using namespace passthru;
using namespace passthru::util;

TEST_SUITE("util::command_runner")
{
    TEST_CASE("a command is taken from the system directories, never from PATH")
    {
        const auto sh = resolve_command("sh");
        REQUIRE(sh);
        CHECK((*sh == "/usr/bin/sh" || *sh == "/bin/sh"));
        CHECK_FALSE(resolve_command("/tmp/update-grub"));
        CHECK_FALSE(resolve_command("../bin/sh"));
        CHECK(resolve_command("passthru-no-such-command").error().code() == Errc::not_found);
    }

    TEST_CASE("a command runs with passthru's environment, nothing of the caller's")
    {
        // `env` prints its environment: a real command on this machine that changes nothing.
        const char* path = std::getenv("PATH");
        const std::string old_path = path != nullptr ? path : "/usr/bin:/bin";
        ::setenv("LD_LIBRARY_PATH", "/tmp/evil", 1);
        ::setenv("pkgdatadir", "/tmp/evil", 1);
        ::setenv("PATH", "/tmp/evil:/usr/bin:/bin", 1);
        CommandRunner runner(RunMode::execute);
        auto result = runner.run({"env"});
        ::unsetenv("LD_LIBRARY_PATH");
        ::unsetenv("pkgdatadir");
        ::setenv("PATH", old_path.c_str(), 1);
        REQUIRE(result);
        CHECK(result->exit_code == 0);
        CHECK(split_lines(result->output)
              == std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", command_lang(std::getenv("LANG"))});
    }

    TEST_CASE("a command gets SIGPIPE's default action although passthru ignores it")
    {
        // passthru ignores SIGPIPE (cli/main.cpp); an ignored signal would
        // stay ignored across exec. grep reports its own ignored signals.
        const auto old_handler = std::signal(SIGPIPE, SIG_IGN);
        CommandRunner runner(RunMode::execute);
        auto result = runner.run({"grep", "^SigIgn:", "/proc/self/status"});
        std::signal(SIGPIPE, old_handler);
        REQUIRE(result);
        REQUIRE(result->exit_code == 0);
        const std::string mask = std::string(trim(result->output.substr(result->output.find(':') + 1)));
        CAPTURE(mask);
        const unsigned long long ignored = std::stoull(mask, nullptr, 16);
        CHECK((ignored & (1ULL << (SIGPIPE - 1))) == 0);
    }

    TEST_CASE("the caller's LANG is kept only when it is a locale name")
    {
        CHECK(command_lang("de_DE.UTF-8") == "LANG=de_DE.UTF-8");
        CHECK(command_lang("C.UTF-8") == "LANG=C.UTF-8");
        CHECK(command_lang("sr_RS.UTF-8@latin") == "LANG=sr_RS.UTF-8@latin");
        CHECK(command_lang("C") == "LANG=C");
        CHECK(command_lang(nullptr) == "LANG=C.UTF-8");
        CHECK(command_lang("") == "LANG=C.UTF-8");
        // grub-mkconfig writes LANG into grub.cfg: a newline would add a GRUB command.
        CHECK(command_lang("C\ninsmod evil") == "LANG=C.UTF-8");
        CHECK(command_lang("en_US.UTF-8 x") == "LANG=C.UTF-8");
        CHECK(command_lang("../../x") == "LANG=C.UTF-8");
    }
}
