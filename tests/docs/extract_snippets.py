#!/usr/bin/env python3
"""Extracts the C++ snippets of one Markdown page into translation units, for the docs/snippets tests.

    extract_snippets.py PAGE OUT_DIR [--modules cuda,hip,redis]

Prints the path of each translation unit written (one a line). The convention (docs/README.md):

- A block fenced with ```cpp (or ```c++) is compiled; other fences (cuda, sh, text, json, cmake) are not.
- Each block is its own translation unit, which starts with `#include <cotune/cotune.hpp>`.
- `<!-- snippet: NAME -->` right before a block (blank lines between allowed) puts it in the translation
  unit NAME instead: every block and hidden part of the page named NAME, in page order.
- `<!-- snippet: NAME` followed by lines of code and a closing `-->` on a line of its own is hidden
  code of NAME at that place (a prelude, a closing brace): compiled, not shown. A ```cpp block right
  after it (blank lines allowed) belongs to NAME too.
- `<!-- snippet: skip REASON -->` right before a block leaves it out; the reason is required.
- `#line` directives point each line to the page, so a compiler error names PAGE:LINE.
- A unit that includes a module's header (<cotune/cuda/...>, hip, redis, dlpack) is left out when the build
  has no such module (--modules lists those it has).

Files are rewritten only when their text changes, and units no longer on the page are removed.
"""
import os
import re
import sys

FENCE_OPEN = re.compile(r"^(\s*)(```+|~~~+)\s*([A-Za-z0-9+_-]*)")
MARK = re.compile(r"^\s*<!--\s*snippet:\s*(\S+)(.*?)(-->)?\s*$")
COMPILED = {"cpp", "c++", "cxx"}
MODULE_HEADER = re.compile(r"#\s*include\s*<cotune/(cuda|hip|redis|dlpack)/")


def fail(page, line, message):
    sys.exit(f"{page}:{line}: {message}")


def extract(page):
    """The page's units: {name: [(first_line, [lines])]} in page order, and the order of names."""
    lines = open(page, encoding="utf-8").read().split("\n")
    units, order = {}, []
    pending = None  # (name, line) of a mark that names the next block
    auto = 0
    i = 0

    def add(name, first, body):
        if name not in units:
            units[name] = []
            order.append(name)
        units[name].append((first, body))

    while i < len(lines):
        line = lines[i]
        m = MARK.match(line)
        if m:
            name, rest, closed = m.group(1), m.group(2).strip(), m.group(3)
            if name == "skip":
                if not closed or not rest:
                    fail(page, i + 1, "`<!-- snippet: skip REASON -->` needs a reason and must close on its line")
                pending = ("skip", i + 1)
                i += 1
                continue
            if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
                fail(page, i + 1, f"snippet name '{name}': use letters, digits, '_' and '-'")
            if closed:  # names the next block
                if rest:
                    fail(page, i + 1, "text after the name of a one-line snippet mark; hidden code goes on the lines below")
                pending = (name, i + 1)
                i += 1
                continue
            # hidden code until a line that is `-->`
            if rest:
                fail(page, i + 1, "hidden code starts on the line after `<!-- snippet: NAME`")
            j = i + 1
            while j < len(lines) and lines[j].strip() != "-->":
                j += 1
            if j == len(lines):
                fail(page, i + 1, "hidden snippet code is not closed by a line holding only `-->`")
            add(name, i + 2, lines[i + 1 : j])
            pending = (name, i + 1, "soft")  # a ```cpp block right after it joins NAME too
            i = j + 1
            continue
        f = FENCE_OPEN.match(line)
        if f:
            indent, fence, lang = f.group(1), f.group(2), f.group(3).lower()
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence):
                j += 1
            if j == len(lines):
                fail(page, i + 1, "code block is not closed")
            body = [l[len(indent):] if l.startswith(indent) else l for l in lines[i + 1 : j]]
            if lang in COMPILED:
                if pending and pending[0] == "skip":
                    pass
                elif pending:
                    add(pending[0], i + 2, body)
                else:
                    auto += 1
                    add(f"block{auto:02d}_line{i + 1}", i + 2, body)
            elif pending and len(pending) == 2:
                fail(page, pending[1], f"a snippet mark before a ```{lang} block (only ```cpp blocks are compiled)")
            pending = None
            i = j + 1
            continue
        if pending and line.strip():
            if len(pending) == 2:
                fail(page, pending[1], "a snippet mark must come right before a ```cpp block (blank lines allowed)")
            pending = None
        i += 1
    if pending and len(pending) == 2:
        fail(page, pending[1], "a snippet mark with no ```cpp block after it")
    return units, order


def main():
    args = sys.argv[1:]
    modules = set()
    if "--modules" in args:
        k = args.index("--modules")
        modules = {m for m in args[k + 1].split(",") if m}
        del args[k : k + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    page, out_dir = os.path.abspath(args[0]), args[1]
    units, order = extract(page)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name in order:
        text = ["// Extracted from " + page + " by tests/docs/extract_snippets.py: edit the page, not this file.",
                "#include <cotune/cotune.hpp>"]
        for first, body in units[name]:
            text.append(f'#line {first} "{page}"')
            text.extend(body)
        source = "\n".join(text) + "\n"
        needed = set(MODULE_HEADER.findall(source))
        if not needed <= modules:
            continue
        path = os.path.join(out_dir, name + ".cpp")
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != source:
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
        written.append(path)
    for f in os.listdir(out_dir):
        p = os.path.join(out_dir, f)
        if f.endswith(".cpp") and p not in written:
            os.remove(p)
    print("\n".join(written))


if __name__ == "__main__":
    main()
