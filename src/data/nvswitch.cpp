// SPDX-License-Identifier: GPL-2.0-or-later
#include "data/nvswitch.hpp"

#include "data/schema.hpp"
#include "util/strings.hpp"

namespace passthru::data {

namespace {

constexpr std::string_view k_nvswitch_schema = "passthru.nvswitch/1";

FabricShape shape_from(const Field& f)
{
    const auto word = f.string();
    if (word == "whole-board") {
        return FabricShape::whole_board;
    }
    if (word == "single-gpu") {
        return FabricShape::single_gpu;
    }
    f.fail("must be whole-board or single-gpu, not '" + word + "'");
}

std::vector<std::string> strings_of(const Field& f)
{
    std::vector<std::string> out;
    out.reserve(f.size());
    for (std::size_t i = 0; i < f.size(); ++i) {
        out.push_back(f[i].string());
    }
    return out;
}

NvswitchGeneration generation_from(const Field& g)
{
    g.only_fields({"name", "ids", "full_passthrough", "guest_needs"}, "a generation");
    NvswitchGeneration gen;
    gen.name = g["name"].nonempty_string();
    const auto ids = g["ids"];
    for (std::size_t i = 0; i < ids.size(); ++i) {
        gen.ids.push_back(util::to_lower(ids[i].string()));
        if (!vendor_device_id(gen.ids.back())) {
            ids[i].fail("'" + gen.ids.back() + "' is not vendor:device");
        }
    }
    const auto shapes = g["full_passthrough"];
    for (std::size_t i = 0; i < shapes.size(); ++i) {
        gen.shapes.push_back(shape_from(shapes[i]));
    }
    gen.guest_needs = strings_of(g["guest_needs"]);
    if (gen.ids.empty()) {
        ids.fail("must not be empty");
    }
    if (gen.shapes.empty()) {
        shapes.fail("must not be empty");
    }
    return gen;
}

std::vector<NvswitchGeneration> generations_from(const Field& doc)
{
    doc.only_fields({"schema", "comment", "generations"}, k_nvswitch_schema);
    std::vector<NvswitchGeneration> out;
    const auto gens = doc["generations"];
    out.reserve(gens.size());
    for (std::size_t i = 0; i < gens.size(); ++i) {
        out.push_back(generation_from(gens[i]));
    }
    return out;
}

} // namespace

Result<std::vector<NvswitchGeneration>> parse_nvswitch_generations(std::string_view text, const std::string& origin)
{
    return load<std::vector<NvswitchGeneration>>(text, origin, k_nvswitch_schema, generations_from);
}

Result<std::vector<NvswitchGeneration>> load_nvswitch_generations(const DataDir& data)
{
    return data.load_profile("host/nvswitch.json", parse_nvswitch_generations);
}

} // namespace passthru::data
