#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Extracts the C++ snippets of README.md and docs/*.md for ctest to compile (label docs).

Every ```cpp (or ```cuda) block is compiled unless the line before its fence marks it:

    <!-- snippet: fragment (why) -->  an intentional fragment, not compiled; the rest says why
    <!-- snippet: file -->            compiled at file scope (it defines kernels, types, ...)
    <!-- snippet: cuda -->            compiled with nvcc (needs the CUDA backend)
    <!-- snippet: prelude=kernel -->  with tests/docs/prelude_kernel.hpp instead of prelude.hpp

(words combine: "<!-- snippet: file cuda prelude=kernel -->"). A snippet is otherwise the body of a
function; its leading #include lines move to file scope; the prelude declares the stand-ins the
docs take from the reader's engine (engine, prof, stream, n_envs, ...). A #line directive makes a
compile error point at the markdown file and line.

A public header's usage example is compiled the same way: the `//`-commented lines between
`/* clang-format off */` and `/* clang-format on */` in the comment at the top of the header, with
tests/docs/prelude_header.hpp (the stand-ins the headers' examples name) and the header itself
included. Compiled with nvcc when it launches or defines a kernel (`<<<`, `__global__`) or the
header is a .cuh (its example is then the body of a __device__ function); at file scope when the
comment line before `/* clang-format off */` is `// example: file`.

usage: extract_snippets.py OUT_DIR ROOT FILE.md|HEADER...   writes OUT_DIR/<id>.cpp|.cu and
OUT_DIR/snippets.cmake (one simprof_doc_snippet(id source nvcc backend markdown line) call each;
backend: the snippet uses the CUDA backend's API, so it needs it built).
"""
import os
import re
import sys

FENCE = re.compile(r"^```(cpp|c\+\+|cuda|cu)\s*$")
MARK = re.compile(r"^<!--\s*snippet:\s*(.*?)\s*-->\s*$")


def snippets(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i].strip())
        if not m:
            i += 1
            continue
        words = []
        if i > 0:
            mark = MARK.match(lines[i - 1].strip())
            if mark:
                words = mark.group(1).split()
                if words and words[0] == "fragment":
                    words = ["fragment"]  # what follows is the reason
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        if j == len(lines):
            sys.exit(f"{path}:{i + 1}: code block never closed")
        yield i + 2, lines[i + 1:j], words, m.group(1) in ("cuda", "cu")
        i = j + 1


HEADER_MARK = re.compile(r"^//\s*example:\s*(.*?)\s*$")


def header_example(path):
    """The usage example of a header: (first line, body lines, mark words), or None."""
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("//") and not line.startswith("/*"):
            return None  # past the header's top comment: no example
        if line.strip() != "/* clang-format off */":
            continue
        words = []
        mark = HEADER_MARK.match(lines[i - 1].strip()) if i > 0 else None
        if mark:
            words = mark.group(1).split()
        j = i + 1
        while j < len(lines) and lines[j].strip() != "/* clang-format on */":
            if not lines[j].startswith("//"):
                sys.exit(f"{path}:{j + 1}: a header example's line must be a // comment")
            j += 1
        if j == len(lines):
            sys.exit(f"{path}:{i + 1}: clang-format off without clang-format on")
        body = [l[2:] for l in lines[i + 1:j]]
        indent = min((len(l) - len(l.lstrip()) for l in body if l.strip()), default=0)
        return i + 2, [l[indent:] for l in body], words
    return None


def write_source(out, rel, ident, first, body, includes_first, file_scope, cuda, device=False):
    """Writes a snippet's translation unit to `out` (only when its text changed): the leading
    #include lines of `body` after `includes_first`, a #line back to `rel`, then the body at file
    scope or inside a function named `ident`. Returns (path, the body's includes, the rest)."""
    includes = []
    while body and (body[0].startswith("#include") or not body[0].strip()):
        if body[0].strip():
            includes.append(body[0])
        body = body[1:]
        first += 1
    src = [f"// Generated from {rel}:{first} by tests/docs/extract_snippets.py."]
    src += [f'#include "{h}"' for h in includes_first] + includes
    src.append(f'#line {first} "{rel}"')
    if file_scope:
        src += body
    else:
        src += [f"{'__device__ ' if device else ''}void {ident}() {{"] + body + ["}"]
    source = os.path.join(out, ident + (".cu" if cuda else ".cpp"))
    new = "\n".join(src) + "\n"
    if not os.path.exists(source) or open(source, encoding="utf-8").read() != new:
        open(source, "w", encoding="utf-8").write(new)
    return source, includes, body


def header_snippet(out, root, path, calls):
    rel = os.path.relpath(path, root)
    found = header_example(path)
    if not found:
        return
    first, body, words = found
    unknown = [w for w in words if w != "file"]
    if unknown:
        sys.exit(f"{rel}: unknown example mark {' '.join(unknown)}")
    device = path.endswith(".cuh")
    text = "\n".join(body)
    cuda = device or "<<<" in text or "__global__" in text
    ident = re.sub(r"[^A-Za-z0-9]", "_", rel) + f"_{first}"
    header = os.path.relpath(path, os.path.join(root, "include"))
    source, _, _ = write_source(out, rel, ident, first, body, ["prelude_header.hpp", header],
                                "file" in words, cuda, device)
    backend = cuda or header.startswith("simprof/cuda") or "simprof::cuda" in text or \
        re.search(r"\bcuda[A-Z]", text) is not None
    calls.append(f'simprof_doc_snippet({ident} "{source}" {"ON" if cuda else "OFF"} '
                 f'{"ON" if backend else "OFF"} "{rel}" {found[0]})')


def main():
    out, root, docs = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    calls = []
    for doc in docs:
        if not doc.endswith(".md"):
            header_snippet(out, root, doc, calls)
            continue
        rel = os.path.relpath(doc, root)
        for first, body, words, cuda_fence in snippets(doc):
            unknown = [w for w in words if w not in ("fragment", "file", "body", "cuda")
                       and not w.startswith("prelude=")]
            if unknown:
                sys.exit(f"{rel}:{first - 1}: unknown snippet mark {' '.join(unknown)}")
            if "fragment" in words:
                continue
            cuda = cuda_fence or "cuda" in words
            prelude = "prelude.hpp"
            for w in words:
                if w.startswith("prelude="):
                    prelude = f"prelude_{w[len('prelude='):]}.hpp"
            start = first  # the snippet's first line: its name
            ident = re.sub(r"[^A-Za-z0-9]", "_", rel) + f"_{start}"
            source, includes, body = write_source(out, rel, ident, first, body, [prelude],
                                                  "file" in words, cuda)
            backend = cuda or any("simprof::cuda" in l or "simprof/cuda" in l
                                  for l in includes + body)
            calls.append(f'simprof_doc_snippet({ident} "{source}" {"ON" if cuda else "OFF"} '
                         f'{"ON" if backend else "OFF"} "{rel}" {start})')
    open(os.path.join(out, "snippets.cmake"), "w", encoding="utf-8").write("\n".join(calls) + "\n")


if __name__ == "__main__":
    main()
