#!/usr/bin/env python3
"""Which kernels of two PTX files are the same code: for answering "did this change touch the
kernel that was measured?" without a GPU.

Usage: bench/ptx_compare.py OLD.ptx NEW.ptx [--pair OLD_TEXT NEW_TEXT]... [--ignore-param-offsets]

Make the PTX with the compile line of build-cuda/compile_commands.json, `-ptx -arch=sm_90a` in
place of `-c` and the -gencode flags (for another commit, from a `git worktree` of it). Kernels
pair up by name with the anonymous namespace's hash taken out; a kernel whose name gained a
template argument pairs with the old one through --pair (texts that pick one kernel of each). Debug lines (.loc,
.file) and label numbers are ignored; --ignore-param-offsets also ignores the offsets of
loads from the kernel's parameter struct (a struct that gained a field moves them all).
"""
import argparse
import difflib
import re
import sys


def entries(path):
    text = open(path, encoding="utf-8").read()
    out = {}
    for part in re.split(r"\n(?=(?:\.visible |\.weak )?\.entry)", text):
        m = re.search(r"\.entry\s+(\S+)\(", part)
        if m:
            out[m.group(1)] = part
    return out


def anonymous(name):
    return re.sub(r"_GLOBAL__N__[0-9a-f]+_", "ANON_", name)


def normalised(body, name, params):
    body = anonymous(body.replace(name, "KERNEL"))
    body = re.sub(r"^\s*\.(loc|file)\b.*$", "", body, flags=re.M)
    body = re.sub(r"\$L__BB\d+_", "$L__BB_", body)
    body = re.sub(r"__local_depot\d+", "__local_depot", body)
    if params:
        body = re.sub(r"param_0\+\d+", "param_0+N", body)
        body = re.sub(r"param_0\[\d+\]", "param_0[N]", body)
        body = re.sub(r"(ld\.param[^\n]*\[%rd\d+\+)-?\d+\]", r"\1N]", body)
        body = re.sub(r"(add\.s64\s+%rd\d+, %rd\d+, )\d+;", r"\1N;", body)
    return [line for line in body.split("\n") if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--pair", nargs=2, action="append", default=[], metavar=("OLD_TEXT", "NEW_TEXT"),
                    help="compare the one old kernel whose name contains OLD_TEXT with the one new "
                    "kernel whose name contains NEW_TEXT")
    ap.add_argument("--ignore-param-offsets", action="store_true")
    args = ap.parse_args()
    old, new = entries(args.old), entries(args.new)
    pairs = []
    if args.pair:
        for old_text, new_text in args.pair:
            o = [k for k in old if old_text in k]
            n = [k for k in new if new_text in k]
            if len(o) != 1 or len(n) != 1:
                sys.exit(f"--pair {old_text} {new_text}: {len(o)} old and {len(n)} new kernels "
                         "match, not one each")
            pairs.append((o[0], n[0]))
    else:
        by_name = {anonymous(k): k for k in new}
        pairs = [(k, by_name[anonymous(k)]) for k in old if anonymous(k) in by_name]
        for k in old:
            if anonymous(k) not in by_name:
                print(f"only in {args.old}: {k}")
    differ = 0
    for o, n in pairs:
        a = normalised(old[o], o, args.ignore_param_offsets)
        b = normalised(new[n], n, args.ignore_param_offsets)
        changed = sum(1 for line in difflib.unified_diff(a, b, lineterm="", n=0)
                      if line[:1] in "+-" and not line.startswith(("+++", "---")))
        differ += changed > 0
        state = "identical" if changed == 0 else f"{changed} lines differ"
        print(f"{anonymous(n)}: {state} ({len(a)} -> {len(b)} lines)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
