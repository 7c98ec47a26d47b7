#!/usr/bin/env python3
r"""Writes src/tokenizer/hf_char_classes.inc: the code points at or above U+0080 that Hugging Face
tokenizers' Punctuation pre-tokenizer (and BertPreTokenizer) treats as punctuation, those its
Digits pre-tokenizer treats as digits, and those its StripAccents normalizer removes, as sorted
ranges; the characters a single_word added token may not touch (regex `\w`); what its
Lowercase normalizer maps each character to; and the characters its NFC/NFD/NFKC/NFKD do not know
(older Unicode tables: they pass through untouched). All asked of tokenizers itself.

None of them follows one Unicode version: punctuation comes from the unicode_categories crate
(Unicode 8.0: U+09FD, added in 10.0, is not punctuation, U+166D, a symbol since 12.0, still is),
digits from Rust's char::is_numeric (Unicode 16.0 in tokenizers 0.23) and combining marks from
unicode-normalization-alignments' tables, while anvil's utf8proc (Debian 12: 2.8, Unicode 15.0)
is none of them. Lowercase is Rust's char::to_lowercase (Unicode 16.0: Garay capitals, U+10D50
on, lowercase; utf8proc 2.8 leaves them) and single_word's word characters are the regex crate's
Unicode `\w` (letters, marks, decimal digits, connector punctuation), not is_alphanumeric.
Its normalization forms (unicode-normalization-alignments) predate Unicode 11.0 (U+07FD is no
mark to them): what they do not know is found by comparing them with unicodedata2, whose Unicode
must be at least utf8proc's.

  python3 -m venv /tmp/t && /tmp/t/bin/pip install tokenizers unicodedata2
  /tmp/t/bin/python tools/hf_char_classes.py > src/tokenizer/hf_char_classes.inc
"""
import sys

import tokenizers
from tokenizers import AddedToken, Tokenizer, normalizers, pre_tokenizers
from tokenizers.models import WordLevel


def isolated_by(pre_tokenizer):
    """Code points >= 0x80 that `pre_tokenizer` isolates as one-character pieces: each candidate
    sits between two 'a's, which no pre-tokenizer here splits."""
    found = set()
    cps = [cp for cp in range(0x80, 0x110000) if not 0xD800 <= cp <= 0xDFFF]
    for i in range(0, len(cps), 4096):
        text = "".join(chr(cp) + "a" for cp in cps[i:i + 4096])
        for piece, _ in pre_tokenizer.pre_tokenize_str(text):
            if len(piece) == 1 and piece != "a":
                found.add(ord(piece))
    return sorted(found)


def ranges(cps):
    out = []
    for cp in cps:
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def write_table(name, cps):
    sys.stdout.write(f"constexpr CodeRange {name}[] = {{\n")
    for a, b in ranges(cps):
        sys.stdout.write(f"    {{0x{a:05X}, 0x{b:05X}}},\n")
    sys.stdout.write("};\n")


def stripped_by(normalizer):
    """Code points >= 0x80 that `normalizer` removes after an 'a'."""
    return [cp for cp in range(0x80, 0x110000)
            if not 0xD800 <= cp <= 0xDFFF and normalizer.normalize_str("a" + chr(cp)) == "a"]


def word_chars():
    r"""Code points after which a single_word added token does not match: tokenizers asks regex
    `\w` of the character that follows (and precedes) the token."""
    tok = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.add_tokens([AddedToken("q", single_word=True, normalized=False)])
    q = tok.token_to_id("q")
    found = []
    cps = [cp for cp in range(0, 0x110000) if not 0xD800 <= cp <= 0xDFFF]
    for i in range(0, len(cps), 4096):
        chunk = cps[i:i + 4096]
        encoding = tok.encode("".join(" q" + chr(cp) for cp in chunk), add_special_tokens=False)
        matched = {start // 3 for id_, (start, _) in zip(encoding.ids, encoding.offsets) if id_ == q}
        found.extend(cp for k, cp in enumerate(chunk) if k not in matched)
    return found


def lowercase_runs():
    """Lowercase's one-character mappings as runs (first, last, stride, delta): every stride-th
    code point from first to last maps to itself plus delta. Multi-character mappings (only
    U+0130 so far) are returned apart."""
    lowercase = normalizers.Lowercase()
    cps = [cp for cp in range(1, 0x110000) if not 0xD800 <= cp <= 0xDFFF]
    single, multi = [], []
    for i in range(0, len(cps), 4096):
        chunk = cps[i:i + 4096]
        # Lowercase maps character by character (no final-sigma context), so a NUL between
        # candidates keeps them apart.
        outs = lowercase.normalize_str("\0".join(chr(cp) for cp in chunk)).split("\0")
        assert len(outs) == len(chunk)
        for cp, out in zip(chunk, outs):
            if out != chr(cp):
                (single if len(out) == 1 else multi).append((cp, out))
    runs = []
    for cp, out in single:
        delta = ord(out) - cp
        if runs and runs[-1][3] == delta and cp - runs[-1][1] == runs[-1][2]:
            runs[-1][1] = cp
        elif runs and runs[-1][0] == runs[-1][1] and runs[-1][3] == delta and cp - runs[-1][1] == 2:
            runs[-1][1], runs[-1][2] = cp, 2
        else:
            runs.append([cp, cp, 1, delta])
    return runs, multi


def normalization_opaque():
    """Code points (>= U+0080) tokenizers' normalization forms treat as unassigned where
    unicodedata2 does not: a decomposition they do not apply, a combining class they do not
    reorder by, or a canonical composition they do not make (then the composition's first part,
    a starter as new as the composite, is listed: the part that would compose). anvil passes
    these through as starters that touch nothing."""
    import unicodedata2
    forms = {name: getattr(normalizers, name)() for name in ("NFC", "NFD", "NFKC", "NFKD")}
    probes = (lambda c: c, lambda c: "a\u0345" + c, lambda c: unicodedata2.normalize("NFD", c))
    cps = [cp for cp in range(0x80, 0x110000) if not 0xD800 <= cp <= 0xDFFF]
    found = set()
    for i in range(0, len(cps), 4096):
        chunk = [chr(cp) for cp in cps[i:i + 4096]]
        for name, form in forms.items():
            for k, probe in enumerate(probes):
                texts = [probe(c) for c in chunk]
                outs = form.normalize_str("\n".join(texts)).split("\n")
                assert len(outs) == len(texts)
                for c, text, out in zip(chunk, texts, outs):
                    if out == unicodedata2.normalize(name, text):
                        continue
                    found.add(ord(c))
                    if k == 2 and len(text) > 1:
                        found.add(ord(text[0]))
    return sorted(found)


punctuation = isolated_by(pre_tokenizers.Punctuation(behavior="isolated"))
digits = isolated_by(pre_tokenizers.Digits(individual_digits=True))
marks = stripped_by(normalizers.StripAccents())
words = word_chars()
opaque = normalization_opaque()
runs, multi = lowercase_runs()
if [cp for cp, _ in multi] != [0x130]:
    sys.exit(f"new multi-character lowercase mappings: {multi}; extend utf8::lowercase")
sys.stdout.write(f"// Generated by tools/hf_char_classes.py from tokenizers {tokenizers.__version__}: the code\n")
sys.stdout.write("// points >= U+0080 its Punctuation and Digits pre-tokenizers split on and its StripAccents\n")
sys.stdout.write("// normalizer removes, as sorted ranges; the word characters (all code points) a single_word\n")
sys.stdout.write("// added token may not touch; the characters its normalization forms do not know; its\n")
sys.stdout.write("// Lowercase normalizer's one-character mappings as runs.\n")
sys.stdout.write("// clang-format off\n")
write_table("kHfPunctuation", punctuation)
write_table("kHfDigits", digits)
write_table("kHfCombiningMarks", marks)
write_table("kHfWordChars", words)
write_table("kHfNormalizationOpaque", opaque)
sys.stdout.write("constexpr LowercaseRun kHfLowercase[] = {\n")
for first, last, stride, delta in runs:
    sys.stdout.write(f"    {{0x{first:05X}, 0x{last:05X}, {stride}, {delta}}},\n")
sys.stdout.write("};\n")
sys.stdout.write("// clang-format on\n")
