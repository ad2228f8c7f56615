// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include "util/term.hpp"

using namespace passthru::util;

TEST_SUITE("util::term")
{
    TEST_CASE("terminal_safe escapes every control character but newline and tab")
    {
        CHECK(terminal_safe("plain text\n\twith a tab\n", false) == "plain text\n\twith a tab\n");
        CHECK(terminal_safe("a\x1b[2Kb", false) == "a\\e[2Kb");
        CHECK(terminal_safe("hidden\rshown", false) == "hidden\\rshown");
        CHECK(terminal_safe(std::string_view("\x00\x07\x7f", 3), false) == "\\x00\\x07\\x7f");
        CHECK(terminal_safe("\x1b]0;title\x07", true) == "\\e]0;title\\x07");
        // C1 controls in UTF-8 (U+009B is a one-byte CSI to some terminals); other UTF-8 stays
        CHECK(terminal_safe("x\xc2\x9b"
                            "2Ky",
                            false)
              == "x\\u009b2Ky");
        CHECK(terminal_safe("Gr\xc3\xa4"
                            "fin \xc2\xb5",
                            false)
              == "Gr\xc3\xa4"
                 "fin \xc2\xb5");
    }

    TEST_CASE("bytes that are not well-formed UTF-8 are shown as \\xNN, never passed raw")
    {
        // Latin-1 (a description written by another tool), a lone continuation byte, 0xff
        CHECK(terminal_safe("caf\xe9 \x80 \xff", false) == "caf\\xe9 \\x80 \\xff");
        // overlong forms, a surrogate, above U+10FFFF, a sequence cut short
        CHECK(terminal_safe("\xc0\xaf", false) == "\\xc0\\xaf");
        CHECK(terminal_safe("\xe0\x80\xaf", false) == "\\xe0\\x80\\xaf");
        CHECK(terminal_safe("\xed\xa0\x80", false) == "\\xed\\xa0\\x80");
        CHECK(terminal_safe("\xf4\x90\x80\x80", false) == "\\xf4\\x90\\x80\\x80");
        CHECK(terminal_safe("\xe2\x82 end", false) == "\\xe2\\x82 end");
        // well-formed 3- and 4-byte characters stay
        CHECK(terminal_safe("\xe2\x82\xac \xf0\x9f\x98\x80", false) == "\xe2\x82\xac \xf0\x9f\x98\x80");
    }

    TEST_CASE("only the tool's own colour passes, and only when colour is on")
    {
        const std::string red = styled("error:", Style::red, true);
        CHECK(terminal_safe(red, true) == "\x1b[1;31merror:\x1b[0m");
        CHECK(terminal_safe(red, false) == "error:");
        CHECK(terminal_safe("\x1b[8mconcealed", true) == "\\e[8mconcealed");
        CHECK(terminal_safe("\x1b[1;31", true) == "\\e[1;31");
        // the tool's own colour spelt in host text is no colour of the tool's
        CHECK(terminal_safe("\x1b[1;31mred\x1b[0m", true) == "\\e[1;31mred\\e[0m");
        CHECK(terminal_safe(styled("a", Style::red, false), true) == "a");
        CHECK(display_width(red) == 6);
    }

    TEST_CASE("bidirectional controls and invisible characters are shown as \\uNNNN")
    {
        // U+202E RIGHT-TO-LEFT OVERRIDE, U+200B ZERO WIDTH SPACE, U+2066 LRI, U+FEFF, U+061C ALM
        CHECK(terminal_safe("vm-\xe2\x80\xae"
                            "gpj.exe",
                            false)
              == "vm-\\u202egpj.exe");
        CHECK(terminal_safe("a\xe2\x80\x8b"
                            "b\xe2\x81\xa6"
                            "c\xef\xbb\xbf"
                            "d\xd8\x9c"
                            "e",
                            true)
              == "a\\u200bb\\u2066c\\ufeffd\\u061ce");
        // other characters near them stay: U+2013 EN DASH, U+20AC EURO SIGN
        CHECK(terminal_safe("\xe2\x80\x93 \xe2\x82\xac", false) == "\xe2\x80\x93 \xe2\x82\xac");
    }

    TEST_CASE("a sequence cut between two writes is held back, at most 23 bytes")
    {
        const std::string red = styled("", Style::red, true);
        const std::string open = red.substr(0, red.find('m'));
        CHECK(terminal_safe_pending("text") == 0);
        CHECK(terminal_safe_pending("text\x1b") == 1);
        for (std::size_t n = 1; n <= open.size(); ++n) {
            CHECK(terminal_safe_pending("text" + open.substr(0, n)) == n);
        }
        CHECK(terminal_safe_pending("text" + red) == 0);
        CHECK(terminal_safe_pending("text\x1b[1;3") == 0);
        CHECK(terminal_safe_pending("text\x1b[2K") == 0);
        CHECK(terminal_safe_pending("text\xc2") == 1);
        // a UTF-8 character cut in two waits for its rest; a complete one or a stray byte does not
        CHECK(terminal_safe_pending("text\xe2\x82") == 2);
        CHECK(terminal_safe_pending("text\xf0\x9f\x98") == 3);
        CHECK(terminal_safe_pending("text\xe2\x82\xac") == 0);
        CHECK(terminal_safe_pending("text\xff") == 0);
        CHECK(terminal_safe_pending("text\x80\x80\x80") == 0);
        CHECK(terminal_safe_pending("\x1b[11111111111") == 0);
    }
}
