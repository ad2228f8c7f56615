#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Makes the compile database clang-tidy reads (scripts/check-tidy.sh) from a build's.

    scripts/tidy-db.py BUILD_DIR OUT_DIR CLANG [REGEX]

A build with precompiled headers (cmake/BuildSpeed.cmake) compiles each file with
`-include <target>/cmake_pch.hxx`, and its compiler's precompiled form of that header
lies next to it (GCC's .gch, or an older clang's .pch), which clang-tidy cannot load.
For every such header this builds the precompiled form clang-tidy's own clang reads
(CLANG: the clang++ of clang-tidy's version), once, with the flags of the target's
files, and writes OUT_DIR/compile_commands.json with the files that match REGEX (an
extended regular expression of the absolute path; default: all), each reading its
target's header through `-include-pch`. clang-tidy then parses the standard library and
the third-party headers once per target instead of once per file, and checks every
file as before: the header's declarations are the same ones the file would include.
A unity build (cmake/BuildSpeed.cmake) names its batches in the build's database, not
the files: each batch is expanded into its files again, each with the batch's flags (the
files of one batch are those of one target). Prints the number of files on stdout.
"""
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys


def arguments(entry):
    if "arguments" in entry:
        return list(entry["arguments"])
    return shlex.split(entry["command"])


def header_args(args, source):
    """The entry's flags for compiling its precompiled header: no output, no input file."""
    out = []
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD", source) or a.startswith("-Winvalid-pch"):
            continue
        out.append(a)
    return out


UNITY_INCLUDE = re.compile(r'^#include "(/[^"]+)"$')


def expand(entries):
    """The database's entries with each unity batch replaced by the files it includes;
    the compilations of the precompiled headers themselves dropped."""
    out = []
    for e in entries:
        if e["file"].endswith("cmake_pch.hxx.cxx"):
            continue
        if "/Unity/unity_" not in e["file"]:
            out.append(e)
            continue
        args = arguments(e)
        with open(e["file"], encoding="utf-8") as f:
            sources = [m.group(1) for m in map(UNITY_INCLUDE.match, f.read().splitlines()) if m]
        for source in sources:
            out.append({"directory": e["directory"], "file": source,
                        "arguments": [source if a == e["file"] else a for a in args]})
    return out


# Compiler warnings of clang-tidy's newer clang that are not the checks' business (the GCC
# build, with -Werror, judges compiler warnings): doctest's TEST_CASE names itself with
# __COUNTER__, a C2y extension to clang 22's -Wpedantic; libstdc++ 12's stable_sort calls
# its own deprecated get_temporary_buffer, which clang 22 reports at the user's call.
EXTRA_ARGS = ["-Wno-c2y-extensions", "-Wno-deprecated-declarations"]
# Per file: dtl's Diff.hpp (Debian's libdtl-dev) assigns to a member in a const member
# function template that nothing instantiates; GCC and clang 14 accept that, clang 22
# rejects the uninstantiated body unless template bodies are parsed when instantiated.
FILE_ARGS = {"src/util/diff.cpp": ["-fdelayed-template-parsing", "-Wno-delayed-template-parsing-in-cxx20"]}


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit("usage: tidy-db.py BUILD_DIR OUT_DIR CLANG [REGEX]")
    build, out_dir, clang = sys.argv[1:4]
    pattern = re.compile(sys.argv[4]) if len(sys.argv) == 5 else None
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        entries = expand(json.load(f))
    os.makedirs(out_dir, exist_ok=True)
    made = {}
    result = []
    for e in entries:
        if pattern and not pattern.match(e["file"]):
            continue
        args = arguments(e)
        if "-include" in args:
            i = args.index("-include")
            header = args[i + 1]
            if header.endswith("cmake_pch.hxx"):
                flags = header_args(args[:i] + args[i + 2:], e["file"])
                if header not in made:
                    name = hashlib.sha256(header.encode()).hexdigest()[:16] + ".pch"
                    pch = os.path.join(os.path.abspath(out_dir), name)
                    cmd = [clang, "-x", "c++-header", header, "-o", pch, "-Wno-unknown-warning-option",
                           "-Wno-pragma-system-header-outside-header"] + [a for a in flags if a != "-Werror"]
                    subprocess.run(cmd, cwd=e["directory"], check=True)
                    made[header] = pch
                # the header through its clang form; clang would warn of the other
                # compiler's form next to it, which it ignores
                args[i:i + 2] = ["-include-pch", made[header], "-Wno-ignored-gch"]
        # last, so that they win over the build's own -Wpedantic
        args += EXTRA_ARGS + next((v for k, v in FILE_ARGS.items() if e["file"].endswith("/" + k)), [])
        result.append({"directory": e["directory"], "file": e["file"], "arguments": args})
    with open(os.path.join(out_dir, "compile_commands.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print(len(result))


if __name__ == "__main__":
    main()
