#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The layering check refuses a plan/, scan/ or explain/ file that reads one of
# passthru's data files itself (DataDir's read, list or load_profile of
# "profiles") instead of getting it through src/data/'s loaders, and allows it in
# src/data/ and a template read in plan. The other rules: layering.sh (slow).
source "$(dirname "$0")/lib.inc"
source "$(dirname "$0")/layering.inc"

# Data files are read in src/data/ only.
plant "a data file read in plan" plan/vm/proxmox.cpp 'static auto t(const data::DataDir& d) { return d.read("profiles", "host/x.json"); }'
plant "load_profile in scan" scan/inventory.cpp 'static auto l(const data::DataDir& d) { return d.load_profile("host/x.json", nullptr); }'
plant "a VM profile read in plan/vm/profile.cpp" plan/vm/profile.cpp 'static auto v(const data::DataDir& d) { return d.read("profiles", "vm/x.json"); }'
plant "a profile listed in plan" plan/vm/backends.cpp 'static auto n(const data::DataDir& d) { return d.list("profiles", "vm"); }'
plant "failures.json read in explain" explain/signature.cpp 'static auto f(const data::DataDir& d) { return d.read("profiles", "failures.json"); }'
plant "load_profile in explain" explain/explain.cpp 'static auto l(const data::DataDir& d) { return d.load_profile("failures.json", nullptr); }'
allow "a data file read in the data room" data/vm_profile.cpp 'static auto v(const DataDir& d) { return d.read("profiles", "vm/x.json"); }'
allow "a template read in plan" plan/templates.cpp 'static auto t(const data::DataDir& d) { return d.read("templates", "x.mustache"); }'

finish "layering: data files are read in src/data/ only"
