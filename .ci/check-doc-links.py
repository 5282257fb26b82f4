#!/usr/bin/env python3
"""Checks that every relative markdown link in README.md and docs/**/*.md resolves.

A link to a file must name a file or directory of the repository; a link with an anchor
(`page.md#some-heading`, or `#some-heading` within a page) must name a heading of that page,
spelled as GitHub spells its anchors (lower case, punctuation but `-` and `_` dropped, spaces
as `-`, a repeated heading given `-1`, `-2` ...). Links inside code blocks and inline code are not
links. External links (http:, https:, mailto:) are not checked.

Usage, from anywhere in the repository:  python3 .ci/check-doc-links.py
Exit status 0 when every link resolves, 1 otherwise (each broken link is printed as file:line).
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+(?:\([^()]*\))?[^()\s]*)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def slug(text):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading keeps its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def lines_outside_code(path):
    """(line number, text) of every line that is not inside a fenced block; inline code blanked."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield number, line


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen = {}
        found = set()
        for _, line in lines_outside_code(path):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            found.add(base if n == 0 else "%s-%d" % (base, n))
            seen[base] = n + 1
        _anchors[path] = found
    return _anchors[path]


def pages():
    yield os.path.join(ROOT, "README.md")
    for directory, _, files in os.walk(os.path.join(ROOT, "docs")):
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(directory, name)


def main():
    broken = 0
    checked = 0
    for page in pages():
        for number, line in lines_outside_code(page):
            line = re.sub(r"`[^`]*`", "``", line)
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue
                checked += 1
                path, _, anchor = target.partition("#")
                resolved = page if path == "" else os.path.normpath(os.path.join(os.path.dirname(page), path))
                problem = None
                if not os.path.exists(resolved):
                    problem = "no such file"
                elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                    problem = "no heading with anchor #" + anchor
                if problem:
                    broken += 1
                    print("%s:%d: %s: %s" % (os.path.relpath(page, ROOT), number, target, problem))
    print("%d relative links checked, %d broken" % (checked, broken))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
