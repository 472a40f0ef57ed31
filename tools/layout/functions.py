#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Function lengths in C++/CUDA sources, by brace matching (tools/layout/check.py reads them).

Comments, strings and characters are blanked (raw strings too); of #if/#elif/#else only the first
branch is kept. A '{' outside a function whose header ends in ')' or a trailing specifier starts a
function; its length runs from the header's first line to the closing brace."""
import re

def strip(text):
    out = []; i = 0; n = len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i); j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2); j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i-1].isalnum() or text[i-1] == '_')):
            k = text.find('(', i + 2); delim = text[i+2:k]
            j = text.find(')' + delim + '"', k); j = n if j < 0 else j + len(delim) + 2
            out.append('""' + re.sub(r'[^\n]', ' ', text[i+2:j])); i = j
        elif c == '"' or (c == "'" and not (i > 0 and (text[i-1].isalnum()) and text[i-1] not in 'uUL')):
            # digit separators like 2'000'000: a quote after a digit is a separator
            if c == "'" and i > 0 and text[i-1].isdigit():
                out.append(' '); i += 1; continue
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == '\\': j += 1
                if j < n and text[j] == '\n': break
                j += 1
            j += 1
            out.append(c + re.sub(r'[^\n]', ' ', text[i+1:j-1]) + c); i = j
        else:
            out.append(c); i += 1
    return ''.join(out)

def preprocess(text):
    lines = text.split('\n'); res = []; stack = []  # stack of (taking_branch, any_taken)
    cont = False
    for ln in lines:
        s = ln.strip()
        active = all(t for t, _ in stack)
        if cont:
            cont = s.endswith('\\'); res.append(''); continue
        if s.startswith('#'):
            d = s[1:].strip()
            if re.match(r'if(n?def)?\b', d): stack.append((True, True))
            elif re.match(r'(elif|else)\b', d):
                if stack: stack[-1] = (False, True)
            elif re.match(r'endif\b', d):
                if stack: stack.pop()
            cont = s.endswith('\\'); res.append(''); continue
        res.append(ln if active else '')
    return '\n'.join(res)

SPEC = {'const', 'noexcept', 'override', 'final', 'mutable', 'try'}
def functions(path):
    raw = open(path, encoding='utf-8', errors='replace').read()
    t = preprocess(strip(raw))
    line_of = []; ln = 1
    for ch in t: line_of.append(ln); ln += ch == '\n'
    stack = []  # entries: ('fn', start_line, name) or ('other',)
    res = []; last_term = 0
    for i, ch in enumerate(t):
        if ch in ';{}':
            if ch == '{':
                in_fn = any(e[0] == 'fn' for e in stack)
                header = t[last_term:i]
                hs = header.rstrip()
                tok = re.search(r'(\)|[A-Za-z_]\w*)\s*$', hs)
                is_fn = False
                if not in_fn and tok and '(' in header:
                    w = tok.group(1)
                    if w == ')' or w in SPEC:
                        first = header.strip().split()[:1]
                        if not first or first[0] not in ('namespace', 'class', 'struct', 'enum', 'union'):
                            is_fn = True
                if is_fn:
                    m = re.search(r'\S', header)
                    start = line_of[last_term + m.start()] if m else line_of[i]
                    sig = ' '.join(header.split())
                    nm = re.findall(r'([~\w]+(?:::[~\w]+)*)\s*\(', sig)
                    name = nm[0] if nm else sig[:40]
                    # skip return type words / macros: take the first call-like token that is not a keyword
                    for cand in nm:
                        if cand not in ('__launch_bounds__', 'alignas', 'decltype', 'noexcept'):
                            name = cand; break
                    stack.append(('fn', start, name))
                else:
                    stack.append(('other',))
            elif ch == '}':
                if stack:
                    e = stack.pop()
                    if e[0] == 'fn':
                        res.append((e[2], e[1], line_of[i], line_of[i] - e[1] + 1))
            last_term = i + 1
        elif ch == ':' and i + 1 < len(t) and t[i+1] != ':' and i > 0 and t[i-1] != ':':
            # access specifiers / labels at class scope end a header ("public:")
            pre = t[last_term:i].strip()
            if pre in ('public', 'private', 'protected'): last_term = i + 1
    return res
