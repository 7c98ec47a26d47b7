#!/usr/bin/env python3
"""Compares anvil's NFC/NFD/NFKC/NFKD with Hugging Face tokenizers' on every code point (alone,
after a class-240 mark, and as its canonical parts) and on random runs of marks, Hangul jamo and
recent letters; prints how many of the ~3.4 million texts differ per form, and the first few.

Each form is a BPE tokenizer over the 256 byte-level symbols with no merges, so the ids are the
normalized text's bytes.

  python3 -m venv /tmp/t && /tmp/t/bin/pip install tokenizers unicodedata2
  ANVIL=build/anvil /tmp/t/bin/python tools/normalization_check.py
"""
import json
import os
import random
import subprocess
import tempfile

import unicodedata2
from tokenizers import Tokenizer, normalizers, pre_tokenizers
from tokenizers.models import BPE

ANVIL = os.environ.get("ANVIL", "build/anvil")


def byte_symbols():
    """GPT-2's byte-to-character map, as ByteLevel uses it."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    symbols = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in symbols:
            symbols[b] = chr(256 + extra)
            extra += 1
    return symbols


def texts():
    rng = random.Random(5)
    cps = [cp for cp in range(0x80, 0x110000) if not 0xD800 <= cp <= 0xDFFF]
    marks = [cp for cp in cps if unicodedata2.combining(chr(cp))]
    assigned = [cp for cp in cps if cp >= 0x300 and unicodedata2.category(chr(cp)) != "Cn"]
    out = [t for cp in cps
           for t in (chr(cp), "a\u0345" + chr(cp), unicodedata2.normalize("NFD", chr(cp)))]
    for _ in range(100000):
        out.append("".join(
            chr(rng.choice(marks if rng.random() < 0.5 else assigned)) if rng.random() < 0.6
            else rng.choice("ae\u1100\u1161\u11a8\uac00 ") for _ in range(rng.randint(1, 8))))
    return out


def main():
    symbols = byte_symbols()
    units = texts()
    work = tempfile.mkdtemp()
    text_file = os.path.join(work, "text.txt")
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        tok = Tokenizer(BPE({symbols[b]: b for b in range(256)}, []))
        tok.normalizer = getattr(normalizers, form)()
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        folder = os.path.join(work, form)
        os.makedirs(folder)
        tok.save(os.path.join(folder, "tokenizer.json"))
        bad = []
        for i in range(0, len(units), 30000):
            chunk = units[i:i + 30000]
            text = "\n".join(chunk)
            ref = tok.encode(text, add_special_tokens=False).ids
            with open(text_file, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            run = subprocess.run([ANVIL, "tokenize", folder, "--file", text_file, "--json",
                                  "--no-special-tokens"], capture_output=True, text=True)
            if run.returncode != 0:
                bad.append(("anvil failed", run.stderr.strip()[:200]))
                continue
            got = json.loads(run.stdout)
            if got == ref:
                continue
            refs = bytes(ref).decode("utf-8").split("\n")
            gots = bytes(got).decode("utf-8", "replace").split("\n")
            if len(gots) != len(refs):
                bad.append(("lines differ in number", i))
                continue
            bad += [(unit, want, have) for unit, want, have in zip(chunk, refs, gots) if want != have]
        print(f"{form:5} {len(units)} texts, {len(bad)} differ {[ascii(b) for b in bad[:4]]}",
              flush=True)


main()
