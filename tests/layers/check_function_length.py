#!/usr/bin/env python3
"""check_function_length.py LIMIT GLOB...: every C function definition in the files matched is at most
LIMIT lines long, from the first line of its signature to its closing brace (at column 0). The CLI
(src/cli) holds orchestration only, so its functions stay short (issue 14). Prints each longer
function as FILE:LINE and exits 1; 0 when there is none.

Usage: python3 tests/layers/check_function_length.py 80 'src/cli/*.c'
"""
import glob
import re
import sys


def functions(lines):
    """(name, first line index, length) of each function defined at column 0."""
    i = 0
    while i < len(lines):
        line = lines[i]
        starts = (line and not line[0].isspace() and not line.startswith(("#", "/*", " *", "}", "typedef", "//"))
                  and "(" in line and "=" not in line.split("(")[0])
        if starts:
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith(("{", ";")):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                k = j + 1
                while k < len(lines) and lines[k] != "}":
                    k += 1
                name = re.findall(r"(\w+)\s*\(", line)
                yield (name[0] if name else line.strip()), i, k - i + 1
                i = k
        i += 1


def main():
    limit = int(sys.argv[1])
    paths = sorted(p for pattern in sys.argv[2:] for p in glob.glob(pattern))
    bad = count = 0
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        for name, first, n in functions(lines):
            count += 1
            if n > limit:
                print(f"{path}:{first + 1}: {name} is {n} lines (limit {limit})")
                bad += 1
    print(f"check_function_length: {count} functions in {len(paths)} files, {bad} over {limit} lines")
    return 1 if bad or not paths else 0


if __name__ == "__main__":
    sys.exit(main())
