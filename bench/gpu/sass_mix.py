#!/usr/bin/env python3
"""The instruction mix of a cubin's kernels, from cuobjdump's SASS.

    ptxas -arch=sm_90 ARTIFACT.ptx -o x.cubin          (where cuvil runs)
    python3 bench/gpu/sass_mix.py x.cubin [NAME_SUBSTR...]   (cuobjdump: GPU machine)

For each kernel (those whose names contain one of the substrings): its
SASS instruction count, and how many are tensor-core (HMMA), shared-memory
(LDS, LDSM, STS, LDGSTS), generic (LD, ST), global (LDG, STG), local
(LDL, STL) and barrier (BAR) instructions, in the static code.
"""
import re
import subprocess
import sys

CLASSES = ("HMMA", "LDSM", "LDS", "STS", "LDGSTS", "LD", "ST", "LDG", "STG", "LDL", "STL", "BAR")


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: sass_mix.py CUBIN [NAME_SUBSTR...]")
    want = sys.argv[2:]
    sass = subprocess.run(["cuobjdump", "-sass", sys.argv[1]], capture_output=True, text=True,
                          check=True).stdout
    kernels, name = {}, None
    for line in sass.splitlines():
        m = re.match(r"\s+Function : (\S+)", line)
        if m:
            name = m.group(1)
            kernels[name] = {}
            continue
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)[.\s;]", line)
        if m and name:
            op = m.group(1)
            kernels[name][op] = kernels[name].get(op, 0) + 1
    print("%-26s %6s " % ("kernel", "total") + " ".join("%6s" % c for c in CLASSES))
    for k, ops in kernels.items():
        if want and not any(w in k for w in want):
            continue
        print("%-26s %6d " % (k[:26], sum(ops.values())) +
              " ".join("%6d" % ops.get(c, 0) for c in CLASSES))


if __name__ == "__main__":
    main()
