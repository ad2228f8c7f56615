// SPDX-License-Identifier: GPL-2.0-or-later
// The one way passthru reads its JSON data files (profiles/*.json, docs/data.md):
// the schema version checked once with one message, unknown fields refused by
// name, and typed getters whose errors name the field's full path in the document
// ("FILE: functions[1].class: expected a string").
// Depends on util/ only.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.hpp"
#include "util/json.hpp"

namespace passthru::data {

// A document that breaks its schema. `message` starts with the field's path
// ("cards[2].class: expected a string", "ids[0] must be a vendor:device id").
// `refused`: the value is well-formed data but unsafe to use (a value that would
// break a generated file): Errc::precondition with `hint`, not Errc::usage.
struct SchemaError
{
    explicit SchemaError(std::string message_, bool refused_ = false, std::string hint_ = {})
        : message(std::move(message_)), refused(refused_), hint(std::move(hint_))
    {}

    std::string message;
    bool refused = false;
    std::string hint;
};

// One value of a document and its path in it ("" for the document itself). A
// member the document does not have is a Field that is not present(). Holds a
// pointer into the document, which must outlive it.
class Field
{
public:
    explicit Field(const nlohmann::json& value, std::string path = {}) : value_(&value), path_(std::move(path)) {}

    // The path as errors name it: "functions[1].class", "(document)" for the root.
    std::string path() const { return path_.empty() ? std::string("(document)") : path_; }
    bool present() const noexcept { return value_ != nullptr; }

    // Type tests, false when the field is not present: for loaders whose
    // message for a wrong type is their own ("ids must be a non-empty list ...").
    bool is_null() const noexcept;
    bool is_string() const noexcept;
    bool is_boolean() const noexcept;
    bool is_integer() const noexcept; // what integer() accepts
    bool is_number() const noexcept;
    bool is_array() const noexcept;
    bool is_object() const noexcept;
    // The value when it has that type; nullopt otherwise (missing included).
    std::optional<std::string> if_string() const;
    std::optional<std::int64_t> if_integer() const;
    std::optional<double> if_number() const;

    bool has(std::string_view key) const;
    // The member `key` of an object (not present when missing or not an object).
    Field operator[](std::string_view key) const;
    // The element `i` of an array (not present when out of range).
    Field operator[](std::size_t i) const;

    // Typed getters: a missing field is "PATH is missing", a value of another
    // type "PATH: expected a string" (an object, an array, true or false, an
    // integer, a number).
    std::string string() const;
    std::string nonempty_string() const; // "PATH: expected a non-empty string"
    // A non-empty string of one line (util::one_line): a value that ends up in a
    // message or a generated file. A line break or another control character is a
    // refusal (Errc::precondition, exit 3) naming the field, as for GPU and VM profiles.
    std::string one_line() const;
    bool boolean() const;
    std::int64_t integer() const;
    double number() const;
    // The size of an array ("PATH: expected an array" when it is none).
    std::size_t size() const;
    // Requires an object ("PATH: expected an object").
    void object() const;
    // The elements of an array, each with its path ("ids[2]"); "PATH: expected
    // an array" when it is none.
    std::vector<Field> elements() const;
    // The member names of an object, in the order nlohmann::json keeps them
    // (sorted); "PATH: expected an object" when it is none.
    std::vector<std::string> keys() const;

    // Every member of this object is one of `allowed` or `ignored`; another is
    // "PATH.KEY is not a field of OF".
    void only_fields(std::span<const std::string_view> allowed, std::string_view of, std::span<const std::string_view> ignored = {}) const;
    void only_fields(std::initializer_list<std::string_view> allowed, std::string_view of,
                     std::initializer_list<std::string_view> ignored = {}) const
    {
        only_fields(std::span<const std::string_view>(allowed.begin(), allowed.size()), of,
                    std::span<const std::string_view>(ignored.begin(), ignored.size()));
    }

    // Throws SchemaError "PATH WHAT" ("functions[0].function must be 0 to 7").
    [[noreturn]] void fail(const std::string& what) const;
    // Throws SchemaError "PATH: expected WHAT".
    [[noreturn]] void expected(const std::string& what) const;

private:
    Field(const nlohmann::json* value, std::string path) : value_(value), path_(std::move(path)) {}
    std::string child(std::string_view key) const;

    const nlohmann::json* value_;
    std::string path_;
};

// "10de:1e07": a PCI vendor:device id, two groups of 4 lower-case hex digits
// (format/grammar.hpp's pci_id, for loaders that cannot reach format/).
bool vendor_device_id(std::string_view text);

// The document is an object ("(document) must be a JSON object") whose "schema"
// is `schema`; otherwise SchemaError "schema must be \"SCHEMA\"", the one
// message for every data file.
void check_schema(const Field& doc, std::string_view schema);

// "WHERE: MESSAGE" as Errc::usage, or as a refusal (Errc::precondition, with
// the hint) when the error says so.
Error schema_error(const std::string& where, const SchemaError& e);

// Checks the schema of DOC, a parsed document, and hands it to PARSE, which
// throws SchemaError where it breaks the schema; `where` starts every message.
template<class T, class Parse>
Result<T> load_document(const nlohmann::json& doc, const std::string& where, std::string_view schema, Parse&& parse)
{
    try {
        const Field root(doc);
        check_schema(root, schema);
        return std::forward<Parse>(parse)(root);
    } catch (const SchemaError& e) {
        return tl::unexpected(schema_error(where, e));
    }
}

// Parses TEXT as one JSON document (util::parse_json, Errc::usage), then as
// load_document.
template<class T, class Parse>
Result<T> load(std::string_view text, const std::string& where, std::string_view schema, Parse&& parse)
{
    PASSTHRU_TRY_ASSIGN(const auto doc, util::parse_json(text, where, Errc::usage));
    return load_document<T>(doc, where, schema, std::forward<Parse>(parse));
}

} // namespace passthru::data
