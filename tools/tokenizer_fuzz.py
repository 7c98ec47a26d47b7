#!/usr/bin/env python3
"""Random strings (scripts, emoji, contractions, marks, special-token lookalikes, private-use and
supplementary code points) tokenized by anvil and by Hugging Face tokenizers with every tokenizer
of tests/data/tokenizers; prints how many differ and the first two of each.

Usage: python3 -m venv /tmp/t && /tmp/t/bin/pip install tokenizers
       /tmp/t/bin/python tools/tokenizer_fuzz.py SEED   (uses ./build/anvil)
"""
import random, subprocess, json, sys, os, tempfile
from tokenizers import Tokenizer
root = os.path.join(os.path.dirname(__file__), '..', 'tests', 'data', 'tokenizers')
rng = random.Random(int(sys.argv[1]))
pieces = ["hello", " world", "  ", "\n", "\n\n", "\t", "The", " quick", "'s", "'S", "'ll", "’s", "123", "4567", "1,000", "3.14", "😀", "👍🏽", "中文", "日本語", "한국어", "Ελληνικά", "русский", "ا ل ع ر ب ي ة", "é", "e\u0301", "ﬁ", "Å", "\u00a0", "\u200b", "\u3000", "<|im_start|>", "<|endoftext|>", "<s>", "</s>", "[CLS]", "```python", "def f(x):", "    return x", "\r\n", "a" * 30, "!!!", "...", "—", "“quoted”", "$", "@user", "http://x.y/z?q=1", "½", "𝔘𝔫𝔦", "İ", "ß", " 12 ", "  a", "a  ", "\u0085", "\u2028", "\ufeff", "▁", "Ġ", "ÄŁ", "<unk>", "ǅ", "Ⅻ", "\U000E0041", "\uE000", "x\u0308"]
cases = []
for i in range(150):
    n = rng.randint(1, 10)
    cases.append("".join(rng.choice(pieces) if rng.random() < 0.85 else chr(rng.choice([rng.randint(32, 0x2FF), rng.randint(0x300, 0xFFFF), rng.randint(0x10000, 0x2FFFF)])) for _ in range(n)))
cases = [c for c in cases if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in c)]
text_file = os.path.join(tempfile.mkdtemp(prefix='anvil-tokenizer-fuzz-'), 'case.txt')
for d in sorted(os.listdir(root)):
    p = os.path.join(root, d)
    if not os.path.isdir(p): continue
    tok = Tokenizer.from_file(os.path.join(p, 'tokenizer.json'))
    bad = 0
    for s in cases:
        ref = tok.encode(s, add_special_tokens=False).ids
        open(text_file, 'w', encoding='utf-8', newline='').write(s)
        r = subprocess.run([os.path.join(os.path.dirname(__file__), '..', 'build', 'anvil'), 'tokenize', p, '--file', text_file, '--json', '--no-special-tokens'], capture_output=True, text=True)
        got = json.loads(r.stdout) if r.returncode == 0 else None
        if got != ref:
            bad += 1
            if bad <= 2: print(f'  {d}: {s!r}\n    ref {ref}\n    got {got if got is not None else r.stderr.strip()[:200]}')
    print(f'{d:40} {len(cases)} cases, {bad} differ', flush=True)
