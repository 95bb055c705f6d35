#!/usr/bin/env python3
"""Bodies in headers (issue 34, item 5): a non-template function whose body is longer than MAX_LINES
lines in a public header (include/cotune/**/*.hpp) fails, naming file:line and the `.ipp` to move it to.

    python3 header_bodies.py <include dir> [--max-lines N] [--pending FILE]

The rule: declarations in the header, bodies of non-templates in the header's `.ipp` (included at the
header's end when header-only, compiled once by impl/*src.hpp with COTUNE_SEPARATE_COMPILATION). A
body of at most MAX_LINES lines between its braces may stay (a one-line accessor, a guard and a
return); one longer moves.

How it reads a header (a heuristic over text, not a C++ parser, which Python's standard library lacks):
comments, string and character literals (raw strings too) and preprocessor lines are blanked; then
every `{` at namespace or class scope is classed by the text since the last `;`, `{` or `}` at that
scope (its "head"): `namespace`/`extern "C"` opens a namespace, `class`/`struct`/`union` a class, `enum`
or a head with `=` before its first `(` (a variable, a lambda) something that is no function, a
member's brace initialiser in a constructor's list (`: a_{x}`) neither, and any other head with a `(`
a function body. Everything inside a function body belongs to it (lambdas, local classes).

Exempt, because the language wants them in the header:
- templates: a head that starts with `template`, any member of a class template (nested classes too),
  and abbreviated templates (an `auto` parameter);
- `constexpr` and `consteval` functions (the compiler evaluates them where they are used);
- `__device__`/`__global__`/`__host__` functions (nvcc compiles them from the header);
- coroutines (a body with `co_await`, `co_return` or `co_yield`): g++ 12 and 13 warn (-Wsubobject-linkage,
  an error under -Werror) when a coroutine compiled out of line in an included `.ipp` keeps a lambda in
  its frame (redis_backend::async_put did);
- files in EXEMPT_FILES, each with its reason;
- `.ipp` files (they are the bodies) and impl/ (the files that compile them).

--compiled-by FILE... (the last option) checks that the bodies are compiled in separate mode: every `.ipp`
under the include dir is reached from impl/*.hpp (a program without CMake compiles those) and from
each FILE given (cotune_separate's sources, src/*.cpp), following the includes of `.ipp` files and of
impl/ (a header includes its `.ipp` only when header-only, so a header's includes are not followed).

Format strings: in a `.ipp` body, every fmt::format / fmt::print format string is written
COTUNE_FMT("...") (detail/config.hpp): a header-only file compiles every body, and fmt's compile-time check
of ~500 plain literals cost each file that includes cotune about 1.2 s (issue 38); COTUNE_FMT keeps the
check where the bodies are compiled once. A plain literal there fails, named with its line.

--pending FILE names bodies not moved yet (`<file under include/cotune> <function>` a line; `#`
comments), for a rule brought to a tree that breaks it: they are listed but do not fail. An entry that
no longer matches a body fails (take it off the list), so such a list only shrinks. cotune's own tree
needs none (every body was moved when the rule came, issue 34).
"""
import re
import sys
from pathlib import Path

MAX_LINES = 3

# Headers the rule skips, each with why.
EXEMPT_FILES = {
    # Included by users' `.cu` files, which nvcc may compile as C++17: no COTUNE_DECL, no .ipp.
    "cuda/compiled_kernels.hpp": "C++17 for nvcc",
    "hip/compiled_kernels.hpp": "C++17 for hipcc",
    "gpu/compiled_kernels.hpp": "C++17 for nvcc and hipcc",
}


def blank(text):
    """The text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        m = re.match(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\(', text[i:i + 40])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + m.group(1) + '"', i + m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + '"')
            i = j
            continue
        if c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
            continue
        if c == "\n":
            line_start = True
        out.append(c)
        i += 1
    return "".join(out)


def classify(head, in_template):
    """What a `{` after `head` (at namespace or class scope) opens: (kind, template)."""
    h = re.sub(r"\[\[.*?\]\]", " ", head)
    h = re.sub(r"\boperator\s*(\(\)|[^\s(]+)\s*\(", "operator_(", h)
    h = " ".join(h.split())
    templ = in_template or h.startswith("template")
    if re.match(r"^(inline\s+)?namespace\b", h) or h.startswith('extern "'):
        return "namespace", False
    if re.search(r"\benum\b", h):
        return "other", templ
    if h.count("(") > h.count(")"):  # a braced default argument: `f(std::string_view s = {}) {`
        return "other", templ
    paren = h.find("(")
    before = h if paren < 0 else h[:paren]
    if re.search(r"\b(class|struct|union)\b", before) and "=" not in before:
        return "class", templ
    if paren < 0 or "=" in before:
        return "other", templ
    # A member's brace initialiser in a constructor's list: `...) : a_(x), b_{` or `: b_{`.
    if re.search(r"\)\s*(noexcept\s*(\(.*\))?\s*)?:\s*.*[A-Za-z_0-9>]$", h) and re.search(r"[A-Za-z_0-9>]$", h):
        if re.search(r"[:,]\s*[A-Za-z_][\w:<>]*$", h):
            return "init", templ
    return "function", templ


def exempt_function(head, templ, body=""):
    h = " ".join(head.split())
    if re.search(r"\bco_(await|return|yield)\b", body):
        return True
    if templ:
        return True
    if re.search(r"\b(constexpr|consteval)\b", h.split("(")[0]) or re.search(r"\bconsteval\b", h):
        return True
    if re.search(r"__(device|global|host)__|COTUNE_HOST_DEVICE", h):
        return True
    params = h[h.find("(") + 1:]
    if re.search(r"(^|[(,])\s*(const\s+)?auto\b", params):  # an abbreviated template
        return True
    return False


def check_file(path, rel, max_lines):
    text = blank(path.read_text(encoding="utf-8"))
    problems = []
    # Scopes: (kind, template, opening line, head, offset of the `{`)
    stack = [("namespace", False, 0, "", 0)]
    head = []
    line = 1
    for pos, c in enumerate(text):
        if c == "\n":
            line += 1
        kind = stack[-1][0]
        if kind in ("function", "fbody"):
            if c == "{":
                stack.append(("fbody", False, line, "", pos))
            elif c == "}":
                k, templ, start, h, opened = stack.pop()
                if k == "function":
                    # Lines of the body that hold code (blank and comment lines do not count).
                    inner = text[opened + 1:pos].split("\n")[1:-1]
                    body = sum(1 for l in inner if l.strip())
                    if body > max_lines and not exempt_function(h, templ, text[opened + 1:pos]):
                        ipp = rel[:-4] + ".ipp"
                        name = re.sub(r"\s*\(.*", "", " ".join(h.split())).split(" ")[-1]
                        problems.append((rel, name,
                            f"include/cotune/{rel}:{start}: {name}(): a body of {body} lines in a header (more "
                            f"than {max_lines}): declare it in the header and move the body to "
                            f"include/cotune/{ipp} (COTUNE_DECL), included by impl/ in separate mode"))
                    head = []
            continue
        if kind == "other" or kind == "init":
            if c == "{":
                stack.append(("other", stack[-1][1], line, "", pos))
            elif c == "}":
                stack.pop()
            head.append(c)
            continue
        # Namespace or class scope.
        if c == "{":
            h = "".join(head).strip()
            k, templ = classify(h, stack[-1][1])
            stack.append((k, templ, line, h, pos))
            if k in ("namespace", "class", "function"):
                head = []
            else:
                head.append(c)
        elif c == "}":
            stack.pop()
            head = []
        elif c == ";":
            head = []
        elif c == ":" and re.search(r"\b(public|private|protected)\s*$", "".join(head)):
            head = []
        else:
            head.append(c)
    if len(stack) != 1:
        problems.append((rel, "", f"include/cotune/{rel}: braces do not balance as read (a `{{` or `}}` inside #if branches?): "
                        "the rule cannot read this header"))
    return problems


def reached(root, starts):
    """The `.ipp` files under `root` that `starts` include, through `.ipp` and impl/ files."""
    seen, todo = set(), list(starts)
    while todo:
        f = todo.pop()
        for m in re.finditer(r'^\s*#\s*include\s*<cotune/([^>]+)>', f.read_text(encoding="utf-8"), re.M):
            rel = m.group(1)
            if rel in seen or not (rel.endswith(".ipp") or rel.startswith("impl/")):
                continue
            seen.add(rel)
            if (root / rel).exists():
                todo.append(root / rel)
    return {r for r in seen if r.endswith(".ipp")}


def uncompiled(root, compiled_by):
    """Problems: `.ipp` files that separate compilation would not compile."""
    every = {p.relative_to(root).as_posix() for p in root.rglob("*.ipp")}
    problems = []
    for what, starts in [("impl/*.hpp", sorted(root.glob("impl/*.hpp"))),
                         (" ".join(Path(f).name for f in compiled_by), [Path(f) for f in compiled_by])]:
        if not starts:
            continue
        for rel in sorted(every - reached(root, starts)):
            problems.append(f"include/cotune/{rel} is not compiled in separate mode: no file of {what} includes "
                            f"it (add `#include <cotune/{rel}>` beside its folder's other .ipp files)")
    return problems


FORMAT_CALL = re.compile(r"fmt::(format|print)\(\s*")


def unchecked_formats(root):
    """Problems: format strings in `.ipp` bodies that are plain literals instead of COTUNE_FMT("...")."""
    problems = []
    for path in sorted(root.rglob("*.ipp")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        for m in FORMAT_CALL.finditer(text):
            at = m.end()
            if m.group(1) == "print":  # fmt::print(out, "...", ...): the string is the second argument
                comma = text.find(",", at)
                if comma < 0:
                    continue
                at = comma + 1
                while at < len(text) and text[at] in " \t\n":
                    at += 1
            if text.startswith('"', at) or text.startswith('R"', at):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"include/cotune/{rel}:{line}: a format string that is not in COTUNE_FMT(...): a "
                                f"header-only file would check it at compile time in every file that includes cotune "
                                f"(detail/config.hpp); write fmt::{m.group(1)}(COTUNE_FMT(\"...\"), ...)")
    return problems


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    root = Path(argv[0])
    max_lines = MAX_LINES
    pending = set()
    compiled_by = []
    args = argv[1:]
    while args:
        if args[0] == "--max-lines" and len(args) > 1:
            max_lines = int(args[1])
        elif args[0] == "--compiled-by":
            compiled_by = args[1:]
            break
        elif args[0] == "--pending" and len(args) > 1:
            for entry in Path(args[1]).read_text(encoding="utf-8").splitlines():
                entry = entry.split("#")[0].split()
                if entry:
                    pending.add((entry[0], entry[1]))
        else:
            print(f"unknown argument {args[0]}")
            return 2
        args = args[2:]
    found = []
    count = 0
    for path in sorted(root.rglob("*.hpp")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("impl/") or rel in EXEMPT_FILES:
            continue
        count += 1
        found += check_file(path, rel, max_lines)
    if count == 0:
        print(f"header bodies: no header under {root}: give the include/cotune directory")
        return 2
    problems = [text for rel, name, text in found if (rel, name) not in pending]
    waiting = [text for rel, name, text in found if (rel, name) in pending]
    seen = {(rel, name) for rel, name, _ in found}
    stale = sorted(entry for entry in pending if entry not in seen)
    if waiting:
        print(f"{len(waiting)} bodies of the pending list still in their headers (not failures):")
        for p in waiting:
            print("  " + p.split(": declare it")[0])
    for rel, name in stale:
        problems.append(f"include/cotune/{rel}: {name}() is on the pending list but no longer a body of more than "
                        f"{max_lines} lines there: take it off the list")
    problems += uncompiled(root, compiled_by) if compiled_by else []
    problems += unchecked_formats(root)
    if problems:
        print(f"{len(problems)} problems with bodies in headers (issue 34, item 5; at most {max_lines} lines a body):")
        for p in problems:
            print("  " + p)
        return 1
    print(f"header bodies: {count} headers under {root} hold no non-template body of more than {max_lines} lines"
          + (f" but the {len(waiting)} pending" if waiting else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
