#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""No dangling paths: every repository path that a comment or a document cites exists.

Usage: check-paths.py [ROOT]   (ROOT: the repository, default the one holding this script)

What is read:
  - comments of the C++, shell, Python, CMake and YAML files (// and /* */ in C++, # elsewhere;
    in Python also the text of triple-quoted strings, where its docstrings are);
  - every Markdown file (*.md), all of its text;
  below src/ tests/ scripts/ packaging/ cmake/ docs/ bench/ helpers/ ansible/ templates/
  .ci/ and the top-level files; never tests/fixtures/hosts/ (generated host trees), .git/
  or a build tree (build*/, or any directory holding a CMakeCache.txt), nor this script.

What is a path mention:
  - a token that starts with a top-level folder of the repository (src/ docs/ tests/ scripts/
    packaging/ templates/ profiles/ bench/ cmake/ .ci/ helpers/ ansible/) or with shared/ and
    is not part of a longer path or URL (`$T/tests/x`, `https://…/docs/x`, `/usr/share/…`
    are not). A file of another project is cited as PROJECT:PATH, as git names a file of a
    commit (`pve-common:src/PVE/Network.pm`, `systemd:src/basic/efivars.c`): the colon right
    before it says the path is not this repository's;
  - a token that starts with a folder of src/ (util/ format/ scan/ plan/ apply/ cli/) and
    names a file (has an extension) or a folder (ends in /);
  - the target of a Markdown link `[text](target)` that is no URL and no #anchor.
  A token counts if it exists relative to the repository, to src/ (for the src folders), or
  to the citing file's own directory; a link target only relative to its document's
  directory, where a reader's browser looks for it. A #anchor and trailing punctuation
  are dropped.
  Skipped as placeholders: tokens with * ? < > { } … or an all-capital word such as NAME,
  FILE, DIR, BUILD (test_NAME.cpp, tests/integration/NAME.sh).

shared/ and ../shared/: the reference material the project was written from
(shared/reference/FACTS.md, PVE9.md, STYLE.md, the seed guides in shared/seeds/) lives
outside the repository, so a path into it dangles for every reader of the tree, even where
a checkout happens to sit next to it. It is reported like any other missing path (a path
that leaves the repository through ../ never counts): cite the original source instead (the upstream file, manual
page or docs/facts.md section). The fixture descriptions (tests/fixtures/descriptions/*.json)
keep their provenance strings: they are data, not comments.

Prints "paths: FILE:LINE: TOKEN does not exist" for each dangling mention and exits 1,
else exits 0. Standard library only; it reads about 500 files in well under a second.
"""
import os
import re
import sys

TOP_DIRS = ("src", "docs", "tests", "scripts", "packaging", "templates", "profiles", "bench",
            "cmake", ".ci", "helpers", "ansible", "shared")
SRC_DIRS = ("util", "format", "scan", "plan", "apply", "cli")
SCANNED_DIRS = ("src", "tests", "scripts", "packaging", "cmake", "docs", "bench", "helpers",
                "ansible", "templates", ".ci")
SKIPPED_DIRS = ("tests/fixtures/hosts", ".git")
SELF = "scripts/check-paths.py"  # its own examples above are examples

CPP_EXT = (".cpp", ".hpp", ".h", ".cc")
HASH_EXT = (".sh", ".py", ".cmake", ".yml", ".yaml", ".inc", ".cfg", ".conf", ".in")

TOKEN_CHARS = r"[\w.*?<>{}/+…-]"
PATH_RE = re.compile(r"(?<![\w./$:-])((?:\.\./)*(?:" + "|".join(re.escape(d) for d in TOP_DIRS + SRC_DIRS)
                     + r")/" + TOKEN_CHARS + r"*)")
LINK_RE = re.compile(r"\]\(([^()\s]+)\)")
# all-capital file stems that stand for a name (NAME.sh), unlike README.md or FACTS.md
PLACEHOLDER_STEMS = {"NAME", "FILE", "DIR", "BUILD", "RELEASE", "ID", "VMID", "N", "X", "PATH", "ROOT", "AREA", "MODULE"}
CAPS_WORD_RE = re.compile(r"(?<![A-Za-z])[A-Z]+(?![a-z])")


def placeholder(token):
    """A glob or a placeholder: * ? < > { } …, or an all-capital word (NAME, BUILD) other than
    a whole file name's stem (README.md, FACTS.md; but NAME.sh is one)."""
    if re.search(r"[*?<>{}…]", token):
        return True
    for segment in token.split("/"):
        stem = segment.split(".", 1)[0]
        if stem and stem.upper() == stem and "." in segment and re.search(r"[A-Z]", stem):
            if stem in PLACEHOLDER_STEMS:
                return True
            continue
        if CAPS_WORD_RE.search(segment):
            return True
    return False


CPP_TOKEN_RE = re.compile(r"""//[^\n]*|/\*.*?(?:\*/|\Z)|(?<![\w])R"([^(\s"]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""",
                          re.S)


def cpp_comments(text):
    """(line, comment text) of every // and /* */ comment; strings and raw strings skipped."""
    out, line, pos = [], 1, 0
    for m in CPP_TOKEN_RE.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        token = m.group(0)
        if token.startswith("/"):
            for k, part in enumerate(token.split("\n")):
                out.append((line + k, part))
    return out


HASH_COMMENT_RE = re.compile(r"(?:^|\s)(#.*)$")


def hash_comments(text, python):
    """(line, comment text) of # comments, and of triple-quoted text in Python."""
    out, in_triple = [], None
    for number, raw in enumerate(text.split("\n"), 1):
        if python:
            if in_triple:
                out.append((number, raw))
                if in_triple in raw:
                    in_triple = None
                continue
            for q in ('"""', "'''"):
                if q in raw:
                    out.append((number, raw))
                    if raw.count(q) % 2 == 1:
                        in_triple = q
                    break
            if in_triple:
                continue
        m = HASH_COMMENT_RE.search(raw)
        if m:
            out.append((number, m.group(1)))
    return out


def snippets(path, text):
    if path.endswith(".md"):
        return list(enumerate(text.split("\n"), 1))
    if path.endswith(CPP_EXT):
        return cpp_comments(text)
    base = os.path.basename(path)
    if path.endswith(HASH_EXT) or base in ("CMakeLists.txt", "run") or text.startswith("#!"):
        return hash_comments(text, path.endswith(".py") or text.startswith("#!/usr/bin/env python"))
    return []


def files(root):
    for name in sorted(os.listdir(root)):
        full = os.path.join(root, name)
        if os.path.isfile(full) and (name.endswith(".md") or name == "CMakeLists.txt"):
            yield name
    for top in SCANNED_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            rel_dir = os.path.relpath(dirpath, root)
            dirnames[:] = sorted(d for d in dirnames
                                 if os.path.join(rel_dir, d) not in SKIPPED_DIRS and not d.startswith("build")
                                 and d != "__pycache__" and not os.path.exists(os.path.join(dirpath, d, "CMakeCache.txt")))
            for f in sorted(filenames):
                if os.path.join(rel_dir, f) != SELF:
                    yield os.path.join(rel_dir, f)


def exists(root, rel_file, token, link):
    token = token.split("#", 1)[0]
    if not token:
        return True
    here = os.path.dirname(rel_file)
    if link:
        bases = [os.path.join(root, here)]
    else:
        bases = [root, os.path.join(root, here)]
    if token.split("/", 1)[0] in SRC_DIRS:
        bases.append(os.path.join(root, "src"))
    inside = os.path.normpath(root) + os.sep
    for b in bases:
        full = os.path.normpath(os.path.join(b, token))
        if full.startswith(inside) and os.path.lexists(full):
            return True
    return False  # missing, or outside the repository (../shared/...)


def mentions(line_text, markdown):
    for m in PATH_RE.finditer(line_text):
        token = m.group(1).rstrip(".,:;")
        first = token.lstrip("./").split("/", 1)[0]
        if first in SRC_DIRS and first not in TOP_DIRS:
            last = token.rsplit("/", 1)[-1]
            if not (token.endswith("/") or "." in last):
                continue  # prose such as scan/plan/apply, not a file
        yield token, False
    if markdown:
        for m in LINK_RE.finditer(line_text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            yield target, True  # relative to the document only, as Markdown renders it


def check(root):
    problems = []
    for rel in files(root):
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        for number, part in snippets(rel, text):
            if "/" not in part.lstrip("/*#"):
                continue  # no path in it
            for token, link in mentions(part, rel.endswith(".md")):
                if placeholder(token.split("#", 1)[0]):
                    continue
                if not exists(root, rel, token, link):
                    problems.append((rel, number, token))
    return [f"paths: {rel}:{number}: {token} does not exist" for rel, number, token in sorted(problems)]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
