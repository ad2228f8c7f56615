// SPDX-License-Identifier: GPL-2.0-or-later
// data/schema: the schema version checked with one message, unknown fields
// named, and typed getters naming the field's full path.
#include <doctest/doctest.h>

#include "../support/usage_error.hpp"
#include "data/schema.hpp"

using namespace passthru;

namespace {

struct Card
{
    std::string name;
    std::vector<std::string> classes;
};

// A small document: {"schema": "t/1", "cards": [{"name": "...", "functions": [{"class": "0300"}]}]}
Card parse_card(const data::Field& card)
{
    card.only_fields({"name", "functions"}, "a card");
    Card out{card["name"].nonempty_string(), {}};
    const auto functions = card["functions"];
    for (std::size_t i = 0; i < functions.size(); ++i) {
        functions[i].only_fields({"class"}, "a function");
        out.classes.push_back(functions[i]["class"].string());
    }
    return out;
}

Result<std::vector<Card>> parse(std::string_view text)
{
    return data::load<std::vector<Card>>(text, "t.json", "t/1", [](const data::Field& doc) {
        doc.only_fields({"schema", "cards"}, "t/1", {"comment"});
        std::vector<Card> out;
        const auto cards = doc["cards"];
        out.reserve(cards.size());
        for (std::size_t i = 0; i < cards.size(); ++i) {
            out.push_back(parse_card(cards[i]));
        }
        return out;
    });
}

std::string error_of(std::string_view text)
{
    return test::usage_error(parse(text));
}

} // namespace

TEST_SUITE("data::schema")
{
    TEST_CASE("a good document loads")
    {
        const auto cards = parse(R"({"schema": "t/1", "comment": "c", "cards": [{"name": "a", "functions": [{"class": "0300"}]},
                                    {"name": "b", "functions": []}]})");
        REQUIRE(cards);
        REQUIRE(cards->size() == 2);
        CHECK(cards->at(0).name == "a");
        CHECK(cards->at(0).classes == std::vector<std::string>{"0300"});
        CHECK(cards->at(1).classes.empty());
    }

    TEST_CASE("the schema version: one message, whatever is wrong with it")
    {
        for (const char* doc : {R"({"cards": []})", R"({"schema": "t/2", "cards": []})", R"({"schema": 1})"}) {
            CAPTURE(doc);
            CHECK(error_of(doc) == "t.json: schema must be \"t/1\"");
        }
        CHECK(error_of("{") == "t.json: not a JSON document");
        CHECK(error_of("[]") == "t.json: (document) must be a JSON object");
        CHECK(error_of("\"t/1\"") == "t.json: (document) must be a JSON object");
    }

    TEST_CASE("an unknown field is named with its path")
    {
        CHECK(error_of(R"({"schema": "t/1", "cards": [], "card": 1})") == "t.json: card is not a field of t/1");
        CHECK(error_of(R"({"schema": "t/1", "cards": [{"name": "a", "functions": [], "vendor": "x"}]})")
              == "t.json: cards[0].vendor is not a field of a card");
        CHECK(
            error_of(
                R"({"schema": "t/1", "cards": [{"name": "a", "functions": []}, {"name": "b", "functions": [{"class": "0300", "id": 1}]}]})")
            == "t.json: cards[1].functions[0].id is not a field of a function");
    }

    TEST_CASE("typed getters name the full path of the field")
    {
        CHECK(error_of(R"({"schema": "t/1", "cards": [{"name": "a", "functions": [{"class": "0300"}]},
                            {"name": "b", "functions": [{"class": "0300"}]}, {"name": "c", "functions": [{"class": "0300"}, {"class": 3}]}]})")
              == "t.json: cards[2].functions[1].class: expected a string");
        CHECK(error_of(R"({"schema": "t/1", "cards": {}})") == "t.json: cards: expected an array");
        CHECK(error_of(R"({"schema": "t/1"})") == "t.json: cards is missing");
        CHECK(error_of(R"({"schema": "t/1", "cards": [{"functions": []}]})") == "t.json: cards[0].name is missing");
        CHECK(error_of(R"({"schema": "t/1", "cards": [{"name": "", "functions": []}]})")
              == "t.json: cards[0].name: expected a non-empty string");
        CHECK(error_of(R"({"schema": "t/1", "cards": [3]})") == "t.json: cards[0]: expected an object");
    }

    TEST_CASE("the other getters")
    {
        const auto doc = nlohmann::json::parse(R"({"b": true, "i": -3, "n": 2.5, "big": 18446744073709551615, "s": "x"})");
        const data::Field root(doc);
        CHECK(root["b"].boolean());
        CHECK(root["i"].integer() == -3);
        CHECK(root["n"].number() == doctest::Approx(2.5));
        CHECK(root["i"].number() == doctest::Approx(-3));
        CHECK(root.has("s"));
        CHECK_FALSE(root.has("t"));
        CHECK_FALSE(root["t"].present());
        CHECK_FALSE(root["t"].is_null());
        CHECK(root.path() == "(document)");
        CHECK_THROWS_AS(root["s"].boolean(), data::SchemaError);
        CHECK_THROWS_AS(root["n"].integer(), data::SchemaError);
        CHECK_THROWS_AS(root["big"].integer(), data::SchemaError);
        CHECK_THROWS_AS(root["s"].number(), data::SchemaError);
        try {
            root["s"]["deeper"][2].string();
            FAIL("no error");
        } catch (const data::SchemaError& e) {
            CHECK(e.message == "s.deeper[2] is missing");
        }
        try {
            root["b"].fail("must be false");
        } catch (const data::SchemaError& e) {
            CHECK(e.message == "b must be false");
        }
    }

    TEST_CASE("type tests and the if_ getters: nothing thrown, a missing field is no type")
    {
        const auto doc = nlohmann::json::parse(
            R"({"z": null, "b": false, "i": 7, "u": 18446744073709551615, "n": 0.5, "s": "x", "a": [1], "o": {"k": 1}})");
        const data::Field root(doc);
        CHECK(root["z"].is_null());
        CHECK(root["b"].is_boolean());
        CHECK(root["i"].is_integer());
        CHECK(root["i"].is_number());
        CHECK_FALSE(root["u"].is_integer()); // what integer() refuses
        CHECK(root["u"].is_number());
        CHECK_FALSE(root["n"].is_integer());
        CHECK(root["s"].is_string());
        CHECK(root["a"].is_array());
        CHECK(root["o"].is_object());
        const data::Field missing = root["m"];
        CHECK_FALSE((missing.is_null() || missing.is_boolean() || missing.is_integer() || missing.is_number() || missing.is_string()
                     || missing.is_array() || missing.is_object()));
        CHECK(root["s"].if_string() == "x");
        CHECK_FALSE(root["i"].if_string());
        CHECK_FALSE(missing.if_string());
        CHECK(root["i"].if_integer() == 7);
        CHECK_FALSE(root["u"].if_integer());
        CHECK_FALSE(root["s"].if_integer());
        CHECK(root["n"].if_number() == doctest::Approx(0.5));
        CHECK(root["i"].if_number() == doctest::Approx(7));
        CHECK_FALSE(root["z"].if_number());
    }

    TEST_CASE("elements and keys keep the path, and name what is not a list or an object")
    {
        const auto doc = nlohmann::json::parse(R"({"list": ["a", 2], "obj": {"y": 1, "x": [true]}, "s": "x"})");
        const data::Field root(doc);
        const auto items = root["list"].elements();
        REQUIRE(items.size() == 2);
        CHECK(items[0].string() == "a");
        CHECK(items[1].path() == "list[1]");
        CHECK(root["obj"].keys() == std::vector<std::string>{"x", "y"});
        CHECK(root["obj"]["x"].elements().front().path() == "obj.x[0]");
        CHECK(root.keys() == std::vector<std::string>{"list", "obj", "s"});
        try {
            root["s"].elements();
            FAIL("no error");
        } catch (const data::SchemaError& e) {
            CHECK(e.message == "s: expected an array");
        }
        try {
            root["list"].keys();
            FAIL("no error");
        } catch (const data::SchemaError& e) {
            CHECK(e.message == "list: expected an object");
        }
        try {
            root["none"].elements();
            FAIL("no error");
        } catch (const data::SchemaError& e) {
            CHECK(e.message == "none is missing");
        }
    }

    TEST_CASE("a refused value is a refusal with its hint")
    {
        const auto e = data::schema_error("p.json", data::SchemaError{"name: not one line", true, "fix the profile"});
        CHECK(e.code() == Errc::precondition);
        CHECK(std::string(e.what()) == "refused: p.json: name: not one line");
        CHECK(e.hints() == std::vector<std::string>{"fix the profile"});
        const auto u = data::schema_error("p.json", data::SchemaError{"name is missing"});
        CHECK(u.code() == Errc::usage);
        CHECK(u.hints().empty());
    }
}
