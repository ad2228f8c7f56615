#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks the two rules that keep passthru's layers honest (docs/ARCHITECTURE.md):

1. Includes point down only: cli -> capture -> explain -> kernel -> apply -> plan -> scan ->
   format -> data -> util. data/ (the loaders of passthru's JSON data files)
   includes util/ only; scan and plan read their data through it.
   Inside plan/, a room (plan/host, plan/vm, plan/network, plan/container) includes the top of
   plan/ (PLAN_TOP below) and its own room, never another room.
2. Only HostFs (src/util/host_fs*) opens host paths and only CommandRunner
   (src/util/command_runner.*) runs programs. Everything else that touches the
   file system or another process outside those two is listed in EXCEPTIONS,
   the one place that says where it may happen and why.
3. No std::regex anywhere in src/: libstdc++'s regex executor recurses once per
   character, so a long line of host input overflows the stack. Input is
   matched by hand (src/util/lex.hpp), in bounded stack.
4. plan reads nothing live (docs/ARCHITECTURE.md): under src/plan/ no
   getenv (the CLI reads the environment and passes what plan needs in the
   request), no "/proc/..." path literal (scan reads the running host into the
   Inventory) and no HostFs::is_live() (plan asks scan::RuntimeState::live).
   Comments do not count, nor messages that merely name a /proc file.
5. Data files are read in the data room: under src/plan/, src/scan/ and src/explain/ no file
   reads a data file itself (DataDir's read, list or origin of "profiles", or
   load_profile); it calls a loader of src/data/, which parses it through
   data::Field. Templates stay plan's (read("templates", ...) is allowed).
   DATA_READ_PENDING would list a loader still to move, with its file (none is).

Usage: check-layering.py [SRC_DIR]   (default: src/ beside this script)
Exit 0 when the tree follows these rules, 1 with one line per violation.
"""
import re
import sys
from pathlib import Path

LAYERS = ["util", "data", "format", "scan", "plan", "apply", "kernel", "explain", "capture", "cli"]  # bottom to top
PLAN_ROOMS = ["host", "vm", "network", "container"]
PLAN_TOP = {"plan.hpp", "planner.hpp", "plan_json.hpp", "plan_detail.hpp"}

# The doors to the host: these files may do anything below (local_file: the operator's
# own files outside --root, and private scratch files that hand libraries HostFs text).
DOORS = ("util/host_fs.", "util/host_fs_", "util/command_runner.", "util/local_file.")

# Calls that open, inspect or change a path, or start a program.
# A member (x.open, p->remove, HostFs::open) is not the C library; ::open and
# std::remove are.
FORBIDDEN_CALLS = re.compile(
    r"(?:(?<![\w:])::|\bstd::|(?<![\w.>:]))\b("
    r"open|openat|openat2|creat|fopen|freopen|fdopen|opendir|fdopendir|scandir|nftw|ftw|glob|"
    r"stat|lstat|fstatat|statx|access|faccessat|readlink|readlinkat|realpath|"
    r"mkdir|mkdirat|rmdir|unlink|unlinkat|rename|renameat|renameat2|remove|link|linkat|symlink|symlinkat|"
    r"chmod|fchmodat|chown|lchown|fchownat|truncate|mkstemp|mkostemp|mkdtemp|tmpfile|mknod|mkfifo|"
    r"statfs|statvfs|chdir|chroot|pivot_root|mount|umount|umount2|utime|utimes|lutimes|utimensat|"
    r"mkstemps|mkostemps|setmntent|inotify_add_watch|fanotify_mark|name_to_handle_at|pathconf|"
    r"popen|system|execl|execlp|execle|execv|execvp|execvpe|execve|execveat|fexecve|posix_spawn|posix_spawnp|"
    r"fork|vfork|clone|syscall|"
    r"dlopen|dlmopen"
    r")\s*\(")
# std::filesystem under its own name, as fs::, or under any alias the file declares
# (namespace sfs = std::filesystem): {fs} is filled in per file by forbidden_std().
FORBIDDEN_STD_TEMPLATE = (
    r"\bstd::(?:[io]?fstream|basic_[io]?fstream|(?:basic_)?filebuf)\b"
    r"|\busing\s+namespace\s+std::filesystem\b"
    r"|\b(?:{fs})::(?!path\b|filesystem_error\b|perms\b|file_type\b)(\w+)\s*[({{]"
    r"|\b(?:{fs})::(?:directory_iterator|recursive_directory_iterator)\b")
FS_ALIAS = re.compile(r"\bnamespace\s+(\w+)\s*=\s*(?:::)?std::filesystem\b")


def forbidden_std(text):
    """FORBIDDEN_STD_TEMPLATE for one file: std::filesystem, fs and the aliases the file declares."""
    names = ["std::filesystem", "fs"] + sorted(set(FS_ALIAS.findall(text)) - {"fs"})
    return re.compile(FORBIDDEN_STD_TEMPLATE.format(fs="|".join(names)))


# Every allowed use outside the doors: (what, regex of the call, files it may
# appear in (prefixes under src/), why).
EXCEPTIONS = [
    ("libpci", r"\bpci_(?:alloc|init|cleanup|scan_bus|fill_info|get_dev|free_dev|read_\w+|write_\w+|lookup_name|"
               r"find_cap|set_param|setup_cache|load_name_list)\s*\(|\bpcie_\w+\s*\(",
     ["scan/libpci."],
     "libpci reads sysfs and pci.ids through its own access method; passthru points its sysfs.path and "
     "the names file under --root before pci_init, so it reads the same tree HostFs does"),
    ("libkmod", r"\bkmod_\w+\s*\(",
     ["plan/host/", "scan/", "kernel/check."],
     "libkmod reads the module indexes (modules.dep.bin, modules.alias.bin ...) and modprobe.d "
     "configuration itself; passthru hands kmod_new() directories under --root only"),
    ("libvirt", r"\bvir[A-Z]\w*\s*\(|(?<![\w.>])(?:::)?\bdl(?:open|sym|close|error)\s*\(",
     ["scan/libvirt_dl.", "scan/libvirt_domain.", "apply/libvirt_apply."],
     "libvirt is dlopen()ed on first use of --backend libvirt and talks to libvirtd over its socket; "
     "the domain XML it returns is edited as text, never read from disk"),
    ("libxml2", r"\bxml(?:ReadMemory|ParseInNodeContext|CtxtReadMemory)\s*\(",
     ["plan/vm/libvirt_xml.", "scan/libvirt_domain."],
     "libxml2 parses XML already held in memory, with XML_PARSE_NONET and no entity loading; its file "
     "readers (xmlReadFile, xmlParseFile, xmlSaveFile ...) are not allowed anywhere"),
    ("shipped data", r"\bstd::ifstream\b|\bstd::filesystem::(?:is_regular_file|directory_iterator)\b",
     ["data/data_dir.cpp"],
     "templates and profiles ship with the binary (the install or source data directory, or --data-dir) "
     "and are not part of the host under --root; only /etc/passthru overrides come through HostFs"),
]
# libxml2 file I/O is never allowed, not even in the files above.
XML_FILE_IO = re.compile(r"\bxml\w*(?:File|Fd|IO|Filename|URL|Url)\w*\s*\(")


SPECIAL = re.compile(r'//|/\*|R"|["\']')


def strip_comments_and_strings(text, keep_strings=False):
    """Blanks comments and (unless keep_strings) string/char literals, keeping line numbers."""
    out = []
    i, n = 0, len(text)
    while i < n:
        # plain code up to the next comment or literal is kept as it is
        m = SPECIAL.search(text, i)
        if not m:
            out.append(text[i:])
            break
        out.append(text[i:m.start()])
        i = m.start()
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "R" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:i + 32])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(text[i:j] if keep_strings else '""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == "R":  # the R of a longer name (fooR"...")
            out.append(c)
            i += 1
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator 1'000
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1] if keep_strings else c + c)
            i = j + 1
    return "".join(out)


def layer_of(rel):
    top = rel.split("/", 1)[0]
    return top if top in LAYERS else None


def room_of(rel):
    parts = rel.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "plan" and parts[1] in PLAN_ROOMS else None


def check_includes(rel, text, problems):
    layer = layer_of(rel)
    room = room_of(rel)
    for lineno, line in enumerate(text.splitlines(), 1):
        m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
        if not m:
            continue
        inc = m.group(1)
        target = layer_of(inc)
        if target is None:
            continue
        if layer and LAYERS.index(target) > LAYERS.index(layer):
            problems.append(f"{rel}:{lineno}: {layer}/ includes {inc}, a layer above it")
        if room:
            target_room = room_of(inc)
            if target_room and target_room != room:
                problems.append(f"{rel}:{lineno}: plan/{room}/ includes {inc} from another room")
            elif target == "plan" and target_room is None and inc.count("/") == 1 \
                    and inc.split("/")[1] not in PLAN_TOP:
                problems.append(f"{rel}:{lineno}: plan/{room}/ includes {inc}, which is not the top of plan/ "
                                f"({', '.join(sorted(PLAN_TOP))})")


EXCEPTION_RES = [(name, re.compile(pattern), files) for name, pattern, files, _ in EXCEPTIONS]


def exception_patterns(rel):
    return [pattern for _, pattern, files in EXCEPTION_RES if any(rel.startswith(f) for f in files)]


# A line can hold a host access only if it calls something, names a file stream or a
# directory iterator, or declares a namespace alias: the others are not searched.
MAY_ACCESS = re.compile(r"\(|fstream|filebuf|directory_iterator|namespace")


def declares(line, start):
    """True when the name at start is declared (bool remove(...), std::string glob(...)), not called."""
    before = line[:start]
    m = re.search(r"([\w>&*]+)\s+$", before)
    return bool(m) and m.group(1) not in ("return", "co_return", "throw", "else", "do", "case", "not", "and", "or")


def check_host_access(rel, text, problems):
    if rel.startswith(DOORS):
        return
    forbidden_std_here = forbidden_std(text)
    mine = exception_patterns(rel)
    for lineno, line in enumerate(text.splitlines(), 1):
        if not MAY_ACCESS.search(line):
            continue
        if XML_FILE_IO.search(line):
            problems.append(f"{rel}:{lineno}: libxml2 file I/O ({XML_FILE_IO.search(line).group(0).strip()}); "
                            "read the file through HostFs and parse it from memory")
        masked = line
        for pattern in mine:
            masked = pattern.sub("ALLOWED(", masked)
        for name, pattern, files in EXCEPTION_RES:
            m = pattern.search(masked)
            if m and name != "shipped data":
                problems.append(f"{rel}:{lineno}: {name} call {m.group(0).strip()} outside "
                                f"{', '.join(files)} (see EXCEPTIONS in scripts/check-layering.py)")
        m = next((c for c in FORBIDDEN_CALLS.finditer(masked) if not declares(masked, c.start())), None) \
            or forbidden_std_here.search(masked)
        if m:
            problems.append(f"{rel}:{lineno}: {m.group(0).strip()} touches the host outside HostFs/CommandRunner "
                            "(src/util/host_fs*, src/util/command_runner.*)")


NO_REGEX = re.compile(r"#\s*include\s*<regex>|\bstd::(?:w?regex|basic_regex|w?[cs]match|regex_\w+)\b")


def check_no_regex(rel, raw, stripped, problems):
    """stripped has the string literals blanked; #include <...> lines are read raw."""
    for lineno, (line, code) in enumerate(zip(raw.splitlines(), stripped.splitlines()), 1):
        m = NO_REGEX.search(line if line.lstrip().startswith("#") else code)
        if m:
            problems.append(f"{rel}:{lineno}: {m.group(0).strip()}: no std::regex in passthru (it recurses per "
                            "character of the input); match by hand with src/util/lex.hpp")


# Rule 4, for files under plan/: the environment, a path under /proc (a literal that
# is the path itself, "/proc/" + pid or "/proc/net/route", not a message naming
# one) and HostFs::is_live().
PLAN_LIVE_CALLS = re.compile(r"\b(?:secure_)?getenv\s*\(|\bis_live\s*\(")
PROC_PATH_LITERAL = re.compile(r'(?<![\w"])(?:u8)?"(/proc(?:/[^"\s]*)?)"')


def check_plan_reads_nothing_live(rel, code, with_strings, problems):
    """code has comments and literals blanked; with_strings has only the comments blanked."""
    for lineno, (line, literal_line) in enumerate(zip(code.splitlines(), with_strings.splitlines()), 1):
        m = PLAN_LIVE_CALLS.search(line)
        if m and "getenv" in m.group(0):
            problems.append(f"{rel}:{lineno}: {m.group(0).strip()}: plan reads nothing live; the CLI reads the "
                            "environment and passes what plan needs in the request (plan::Request::ssh_connection)")
        elif m:
            problems.append(f"{rel}:{lineno}: {m.group(0).strip()}: plan asks scan::RuntimeState::live whether the "
                            "root is this host, decided once by scan")
        m = PROC_PATH_LITERAL.search(literal_line)
        if m:
            problems.append(f"{rel}:{lineno}: \"{m.group(1)}\": plan reads nothing live; scan reads /proc into "
                            "the Inventory (scan::RuntimeState)")


# Rule 5: a data file read outside src/data/ (the literal "profiles" is read with the strings kept).
DATA_READ = re.compile(r'\bload_profile\s*\(|\b(?:read|list|origin)\s*\(\s*"profiles"')
# The layers that get their data from src/data/'s loaders (the CLI calls them and hands
# the data down), never by reading a data file themselves.
DATA_READERS_REFUSED = ("scan", "plan", "explain")
# The loaders that still read their data file in their room: (file, why). None is left.
DATA_READ_PENDING = {}


def check_data_room(rel, with_strings, problems):
    """with_strings has only the comments blanked."""
    if layer_of(rel) not in DATA_READERS_REFUSED or rel in DATA_READ_PENDING:
        return
    for lineno, line in enumerate(with_strings.splitlines(), 1):
        m = DATA_READ.search(line)
        if m:
            problems.append(f"{rel}:{lineno}: {m.group(0).strip()}: plan, scan and explain read no data file themselves; "
                            "load it in src/data/ (data::DataDir, data::Field) and call that loader")


def main():
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "src"
    files = sorted(p for p in src.rglob("*") if p.suffix in (".cpp", ".hpp"))
    if not files:
        print(f"layering: no C++ files under {src}", file=sys.stderr)
        return 1
    problems = []
    for path in files:
        rel = path.relative_to(src).as_posix()
        raw = path.read_text(encoding="utf-8")
        check_includes(rel, raw, problems)  # an #include inside a comment does not count: the regex anchors at #
        stripped = strip_comments_and_strings(raw)
        check_host_access(rel, stripped, problems)
        check_no_regex(rel, raw, stripped, problems)
        with_strings = strip_comments_and_strings(raw, keep_strings=True)
        if layer_of(rel) == "plan":
            check_plan_reads_nothing_live(rel, stripped, with_strings, problems)
        check_data_room(rel, with_strings, problems)
    for p in problems:
        print(f"layering: {p}")
    print(f"layering: {len(files)} files, {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
