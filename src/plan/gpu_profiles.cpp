// SPDX-License-Identifier: GPL-2.0-or-later
// GPU profiles (profiles/gpus/*.json): loading and lookup by vendor:device.
#include <algorithm>
#include <stdexcept>

#include "plan/common.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {
std::size_t g_loads = 0;
}

std::size_t gpu_profile_loads() noexcept
{
    return g_loads;
}

const std::vector<GpuProfile>& gpu_profiles(const PlanContext& ctx)
{
    static const std::vector<GpuProfile> none;
    return ctx.gpu_profiles != nullptr ? *ctx.gpu_profiles : none;
}

std::vector<GpuProfile> load_gpu_profiles(const DataDir& data, std::vector<std::string>& warnings)
{
    ++g_loads;
    std::vector<GpuProfile> out;
    for (const auto& name : data.list("profiles", "gpus")) {
        if (!name.ends_with(".json")) {
            continue;
        }
        auto text = data.read("profiles", "gpus/" + name);
        if (!text) {
            warnings.push_back("GPU profile " + name + ": " + text.error().what());
            continue;
        }
        const auto where = data.origin("profiles", "gpus/" + name).value_or(name);
        try {
            const auto j = nlohmann::json::parse(*text);
            GpuProfile p;
            p.file = name;
            p.name = j.at("name").get<std::string>();
            p.architecture = j.value("architecture", "");
            p.chip = j.value("chip", "");
            if (j.contains("vram_gib") && j["vram_gib"].is_number()) {
                p.vram_gib = j["vram_gib"].get<double>();
            }
            if (j.contains("tdp_watts") && j["tdp_watts"].is_number_integer()) {
                p.tdp_watts = j["tdp_watts"].get<int>();
            }
            for (const auto& id : j.at("ids")) {
                p.ids.push_back(util::to_lower(id.get<std::string>()));
            }
            if (j.contains("quirks")) {
                for (const auto& q : j["quirks"]) {
                    p.quirks.push_back(q.get<std::string>());
                }
            }
            p.vram_note = j.value("vram_note", "");
            if (p.ids.empty()) {
                throw std::runtime_error("no ids");
            }
            out.push_back(std::move(p));
        } catch (const std::exception& e) {
            warnings.push_back("GPU profile " + where + " is not valid (" + e.what() + "); it is ignored");
        }
    }
    return out;
}

const GpuProfile* find_profile(const std::vector<GpuProfile>& profiles, std::string_view vendor_device)
{
    for (const auto& p : profiles) {
        if (std::find(p.ids.begin(), p.ids.end(), vendor_device) != p.ids.end()) {
            return &p;
        }
    }
    return nullptr;
}

} // namespace passthru::plan::detail
