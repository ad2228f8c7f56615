// SPDX-License-Identifier: GPL-2.0-or-later
// The one way passthru opens a libkmod context.
#pragma once

struct kmod_ctx;

namespace passthru::scan {

// kmod_new(3) with libkmod's own logging off from the start (KMOD_LOG=0 while
// the context is made; it logs what it parses to stderr before any log
// function can be installed; the caller's KMOD_LOG is put back after), then
// with a log function that drops every line: libkmod's words never reach
// passthru's output. nullptr when kmod_new fails.
kmod_ctx* new_quiet_kmod_ctx(const char* dirname, const char* const* config_paths);

} // namespace passthru::scan
