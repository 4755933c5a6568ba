#!/usr/bin/env python3
"""Fails when a C++ function in src/ or apps/ is longer than 150 lines (STYLE.md: a function
that does one thing fits on a screen). Usage: check_function_length.py [LIMIT [FILES...]].

Lists C++ function bodies longer than a limit. A body is a brace block whose opening brace
closes a line that (with the lines before it back to the previous ';', '}' or '{') looks like a
function head: it has a ')' and is not a control statement, a namespace, a class or an
initializer. Strings, chars and comments are blanked before brace matching. Length = lines from
the first line of the head to the closing brace, inclusive."""
import re, sys

def blank(text):
    out = []; i = 0; n = len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i); j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2); j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(')' + m.group(1) + '"', i)
            j = end + len(m.group(1)) + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(' ' * (j + 1 - i)); i = j + 1
        else:
            out.append(c); i += 1
    return ''.join(out)

CONTROL = re.compile(r'^\s*(if|for|while|switch|catch|else|do|namespace|class|struct|enum|union|extern)\b')

def functions(path):
    text = blank(open(path, encoding='utf-8', errors='replace').read())
    stack = []
    line = 1; head_start = 1
    results = []
    for i, c in enumerate(text):
        if c == '\n':
            line += 1
        elif c == '{':
            # the head: text since the previous ; { } at this point
            k = max(text.rfind(';', 0, i), text.rfind('{', 0, i), text.rfind('}', 0, i))
            head = text[k + 1:i]
            start_line = text.count('\n', 0, k + 1) + 1 + (len(head) - len(head.lstrip('\n'))) - 0
            h = head.strip()
            is_fn = (')' in h and not CONTROL.match(h) and not h.endswith('=')
                     and not re.search(r'\)\s*(const\s*)?(override\s*)?(noexcept\s*)?(->\s*[\w:<>]+\s*)?$', h) is None)
            is_fn = is_fn and not re.search(r'=\s*$', h) and not h.startswith('[')
            stack.append((is_fn, start_line, h.split('(')[0].split()[-1] if is_fn and h.split('(')[0].split() else ''))
        elif c == '}':
            if stack:
                is_fn, s, name = stack.pop()
                if is_fn and not any(f for f, _, _ in stack if f):
                    results.append((line - s + 1, s, name))
    return results

def main():
    import pathlib, subprocess
    root = pathlib.Path(__file__).resolve().parent.parent
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 150
    paths = sys.argv[2:] or subprocess.run(
        ['git', 'ls-files', 'src/*.cpp', 'src/*.h', 'apps/*.cpp', 'apps/*.h'], cwd=root,
        capture_output=True, text=True, check=True).stdout.split()
    long = []
    for path in paths:
        for n, s, name in functions(str(root / path) if not path.startswith('/') else path):
            if n > limit:
                long.append(f'{path}:{s}: {name} {n} lines')
    for line in long:
        print(line)
    print(f'function length: {len(paths)} files, {len(long)} functions over {limit} lines')
    return 1 if long else 0


if __name__ == '__main__':
    sys.exit(main())
