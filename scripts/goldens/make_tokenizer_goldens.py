#!/usr/bin/env python3
"""Makes the golden data for anvil's C++ tokenizer with Hugging Face `tokenizers` itself.

Writes tests/data/tokenizers/ (see the README.md written there):
  * qwen3/: the real Qwen3 tokenizer.json (+ tokenizer_config.json) copied from the shared assets,
    with a broad stress corpus encoded and decoded by the library.
  * one folder per synthetic tokenizer, trained here with the library's own BPE trainer on a small
    corpus written into this script, each covering a configuration the C++ code must support
    (byte-level GPT-2 / Llama-3 pipelines, SentencePiece-style byte fallback, normalizers,
    pre-tokenizers and split behaviours, added-token options, both merges formats).

Every folder gets:
  tokenizer.json      the tokenizer, as the library saves it
  cases.json          [{text, ids, ids_no_special, decoded, decoded_skip_special}, ...]
                      ids: encode(text, add_special_tokens=True); ids_no_special: ...=False;
                      decoded*: decode(ids, skip_special_tokens=False / True)
  decode_cases.json   [{ids, decoded, decoded_skip_special}, ...] for random id sequences, which
                      exercise the decoders on invalid UTF-8 (lossy replacement, byte fallback)
and the normalizer / pre-tokenizer variants also components.json: [{normalized, pre_tokens}],
one per case of cases.json in the same order, from the tokenizer's normalizer and pre-tokenizer
alone (no added-token splitting), to debug one stage at a time.

Everything is deterministic (fixed seeds, single-threaded training), and every file is checked
by reloading tokenizer.json with Tokenizer.from_file and encoding/decoding again.

Usage: make_tokenizer_goldens.py [--out DIR] [--qwen3-dir DIR]
"""
import os

# The machine is shared and small: keep the library's rayon pool off (this also makes training
# order-independent of thread scheduling). Must be set before tokenizers is imported.
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import string  # noqa: E402
import sys  # noqa: E402
import unicodedata  # noqa: E402
from pathlib import Path  # noqa: E402

import tokenizers  # noqa: E402
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,  # noqa: E402
                        pre_tokenizers, processors, trainers)

REPO = Path(__file__).resolve().parents[2]

# ------------------------------------------------------------------------------------------------
# Test texts
# ------------------------------------------------------------------------------------------------

PYTHON_CODE = '''import os
import sys


class Tokenizer:
    """Splits text into tokens."""

    def __init__(self, vocab: dict[str, int], unk: str = "<unk>") -> None:
        self.vocab = vocab
        self.unk = unk

    def encode(self, text):
        ids = []
        for word in text.split():
            if word in self.vocab:
                ids.append(self.vocab[word])
            else:
                ids.append(self.vocab.get(self.unk, 0))  # fall back
        return ids


if __name__ == "__main__":
    tok = Tokenizer({"hello": 0, "world": 1})
    print(tok.encode("hello world"), file=sys.stderr)
'''

PYTHON_TABS = "def f(x):\n\tif x > 0:\n\t\treturn x * 2\n\telse:\n\t\treturn -x\n\n\n\tpass\n"

CPP_CODE = '''#include <cstdint>
#include <string>
#include <vector>

namespace anvil {

// Returns the number of UTF-8 code points in `s`.
std::size_t count_code_points(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) {
        if ((c & 0xC0) != 0x80) ++n;
    }
    return n;
}

template <typename T>
struct Span { T* data; std::size_t size; };

int main(int argc, char** argv) {
    std::vector<int64_t> ids{1, 2, 3};
    auto x = ids.size() >> 1 << 2;  // shifts
    return argc > 1 ? 0 : -1;
}

}  // namespace anvil
'''

JSON_TEXT = '''{
  "name": "anvil",
  "version": "0.1.0",
  "vocab_size": 151936,
  "rope_theta": 1000000.0,
  "eos_token_id": [151645, 151643],
  "nested": {"a": [1, 2.5, -3e-7, true, false, null], "b": "\\u00e9\\n"},
\t"tabbed": "value"
}
'''

ENGLISH = [
    "Hello world",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times, it was the age of wisdom, "
    "it was the age of foolishness...",
    "A tokenizer splits text into pieces; a model only ever sees the ids of those pieces.",
    "Dr. Smith (born 1970) moved to St. Louis, Mo., in Sept. 2001 -- and never left.",
    "She said: \"Don't worry, it's fine.\" He replied, 'OK.'",
    "e-mail: john.doe+tag@example.com, URL: https://example.com/path?q=1&r=two#frag",
    "USA, U.S.A., NASA and a.k.a. are abbreviations.",
    "CamelCaseWords and snake_case_words and kebab-case-words and SCREAMING_CASE.",
    "I",
    "a",
    "",
]

CODE = [
    PYTHON_CODE,
    PYTHON_TABS,
    CPP_CODE,
    JSON_TEXT,
    "x = [i ** 2 for i in range(10) if i % 2 == 0]",
    "if (a != b && c <= d || !e) { return *p->q; }",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
    "$ ls -la | grep '.py' > out.txt 2>&1",
    "    indented four\n        indented eight\n            twelve",
    "\tone tab\n\t\ttwo tabs\n\t\t\tthree tabs",
    "a\tb\t\tc\t\t\td",
    "// comment\n/* block\n   comment */\n#define X(a) ((a) * 2)",
    "lambda x: x\n\n\n\ndef g():\n    pass\n",
]

LINE_ENDINGS = [
    "line one\r\nline two\r\nline three\r\n",
    "a\rb\rc",
    "\r",
    "\r\n",
    "\r\n\r\n",
    "\n\r",
    "a \r\n b",
    "a\r\r\nb",
    "trailing cr\r",
    "mixed\nline\r\nendings\rhere",
    "  \r\n  indented after crlf",
]

LEADING_TRAILING = [
    " hello",
    "hello ",
    "  hello  ",
    "\nhello\n",
    "\thello\t",
    " \n hello \n ",
    "   ",
    "\n",
    "\t",
    " ",
    "hello\n\n",
    "\n\nhello",
]

NUMBERS = [
    "1234567890123456789012345678901234567890",
    "3.14159265358979",
    "-0.5e-10 and +6.02E23",
    "abc123def",
    "ABC123DEF456ghi7",
    "1,000,000.00",
    "2024-01-15T13:45:30Z",
    "0x1F 0b1010 0o777",
    "v1.2.3-rc.4",
    "12345 678 9 10 11 100 1000 10000",
    "Call 555-123-4567 or +1 (800) 555-0199.",
    "\u0661\u0662\u0663 \u0967\u0968\u0969 \uff11\uff12\uff13",
    "\u2460\u2461\u2462 \u00bd \u00b2 \u2167",
    "The year 1999 had 365 days; 2000 had 366.",
    "7",
    "00000000",
]

CONTRACTIONS = [
    "it's don't they're we've I'm you'll he'd",
    "IT'S DON'T THEY'RE WE'VE I'M YOU'LL HE'D",
    "It'S DoN'T tHeY'Re We'Ve i'M yOu'Ll hE'd",
    "'s 't 're 've 'm 'll 'd",
    "'S 'T 'RE 'VE 'M 'LL 'D",
    "John's book's cover",
    "JOHN'S BOOK'S",
    "''s '''ll",
    "rock 'n' roll, 'tis the season",
    "can\u2019t won\u2019t it\u2019s",
    "'",
    "''",
    "x'sy'llz",
    "'s's's",
]

PUNCTUATION = [
    "!!!???...",
    "---",
    "=====",
    "...",
    "?!?!",
    "\u00ab\u00bb \u201cquoted\u201d \u2018single\u2019",
    "(a)[b]{c}<d>",
    "@#$%^&*",
    "-> => <= >= != == :: ;;",
    "...\n\n",
    "!!! !!! !!!",
    "a.b,c;d:e!f?g",
    "~`|\\/",
    "\u3002\u3001\uff01\uff1f\u300c\u300d",
    "\u00bfQu\u00e9? \u00a1Hola!",
]

MULTILINGUAL = [
    "\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c\u6211\u4eec\u53bb\u516c\u56ed\u5427\u3002",
    "\u4e2d\u6587\u548cEnglish\u6df7\u5408mixed\u6587\u672c",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002\u30ab\u30bf\u30ab\u30ca"
    "\u3068\u3072\u3089\u304c\u306a\u3002",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8\uc785\ub2c8\ub2e4. \uc548\ub155\ud558\uc138\uc694!",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645! \u0647\u0630\u0627"
    " \u0646\u0635 \u0639\u0631\u0628\u064a.",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd, \u05d6\u05d4 \u05d8\u05e7\u05e1\u05d8 "
    "\u05d1\u05e2\u05d1\u05e8\u05d9\u05ea.",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e! \u092f\u0939 "
    "\u0939\u093f\u0928\u094d\u0926\u0940 \u0939\u0948\u0964",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e0a\u0e32\u0e27\u0e42\u0e25\u0e01 \u0e19\u0e35\u0e48"
    "\u0e04\u0e37\u0e2d\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u042d\u0442\u043e \u0440\u0443"
    "\u0441\u0441\u043a\u0438\u0439 \u0442\u0435\u043a\u0441\u0442.",
    "\u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 \u039a\u03cc\u03c3\u03bc\u03b5! \u0391\u03b2"
    "\u03b3\u03b4 \u03c9\u03c8\u03c7.",
    "Stra\u00dfe, \u00c6sir, \u00f8re, \u0141\u00f3d\u017a, \u0130stanbul, \u0131\u015f\u0131k",
    "Ti\u1ebfng Vi\u1ec7t c\u00f3 d\u1ea5u",
    "\u10e5\u10d0\u10e0\u10d7\u10e3\u10da\u10d8 \u0540\u0561\u0575\u0565\u0580\u0565\u0576 \u12a0"
    "\u121b\u122d\u129b",
    "\U00020000\U0002a6d6 \U0001d400\U0001d7ff \U00010348",
]

EMOJI = [
    "\U0001f600",
    "I love it \U0001f60d\U0001f60d\U0001f60d!",
    "\U0001f44d\U0001f3fd thumbs up, medium skin",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 family",
    "\U0001f1fa\U0001f1f8\U0001f1ef\U0001f1f5\U0001f1e9\U0001f1ea flags",
    "\U0001f3f3\ufe0f\u200d\U0001f308 rainbow flag",
    "\u2764\ufe0f red heart, \u2764 plain",
    "1\ufe0f\u20e3 keycap",
    "\U0001f9d1\U0001f3ff\u200d\U0001f4bb technologist",
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f Scotland",
    "\u263a\u2603\u2614\u26a1",
]

COMBINING = [
    "e\u0301",
    "\u00e9",
    "cafe\u0301 vs caf\u00e9",
    "A\u030a \u00c5 \u212b",
    "\u1e9b\u0323",
    "n\u0303 \u00f1",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f"
    "\u031e\u0320\u034dA\u036b\u0357\u0334\u0362\u0335\u031c\u0330\u0354L\u0368\u0367\u0369\u0358"
    "\u0320G\u0311\u0357\u030e\u0305\u035b\u0341\u0334\u033b\u0348\u034d\u0354\u0339O\u0342\u030c"
    "\u030c\u0358\u0328\u0335\u0339\u033b\u031d\u0333",
    "\u1100\u1161\u11a8 vs \uac01",
    "\ufb01 ligature, \ufb00, \u2126, \u3392, x\u00b2",
    "\u0301 leading combining mark",
    "a\u0308\u0301\u0323",
    "\u0915\u094d\u0937 \u0e01\u0e34\u0e4a",
]

SPACES = [
    "a\u00a0b",
    "\u00a0",
    "100\u00a0km",
    "\u65e5\u672c\u3000\u8a9e",
    "\u3000",
    "\u3000\u3000leading ideographic spaces",
    "a\u200bb",
    "\u200b",
    "zero\u200cwidth\u200djoiner",
    "\ufeffBOM at start",
    "word\u2060joiner",
    "em\u2003space thin\u2009space narrow\u202fnbsp ogham\u1680space",
    "next\u0085line, line\u2028separator, paragraph\u2029separator",
    "vertical\x0btab and form\x0cfeed",
    "nul\x00char and bell\x07 and del\x7f",
    "\uff21\uff22\uff23\u3000\uff44\uff45\uff46\uff01",
    "\uff28\uff45\uff4c\uff4c\uff4f\uff0c\u3000\uff37\uff4f\uff52\uff4c\uff44",
]


def whitespace_runs():
    """Runs of spaces, tabs and newlines of many lengths, alone and between words: the split
    regexes treat `\\s+(?!\\S)` and newline runs specially, and merges exist for runs of spaces."""
    out = []
    for n in (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64):
        out.append(" " * n)
        out.append("a" + " " * n + "b")
    for n in (1, 2, 3, 4, 6, 10, 20):
        out.append("\n" * n)
        out.append("x" + "\n" * n + "y")
        out.append("\t" * n + "z")
    for n in (1, 2, 3, 5):
        out.append(" \n" * n)
        out.append("\n " * n + "w")
        out.append("x\n" + " " * (4 * n) + "y")
    return out


def special_token_texts(specials, extra_partials=()):
    """The tokenizer's special tokens embedded in text every way an added-token matcher can get
    wrong: alone, with spaces/newlines around, glued to words, adjacent, at start and end, and
    partial or mangled forms that must NOT match."""
    out = []
    for s in specials:
        out += [s, " " + s, s + " ", "\n" + s + "\n", "a" + s + "b", "a " + s + " b", s + s,
                s + "\n" + s, "start " + s, s + " end"]
    for a, b in zip(specials, specials[1:] + specials[:1]):
        out.append(a + b)
        out.append(a + "text" + b)
    partials = list(extra_partials)
    for s in specials:
        if len(s) > 2:
            other_case = s.upper() if s.upper() != s else s.lower()
            partials += [s[:-1], s[1:], s[: len(s) // 2], other_case, s[:1] + " " + s[1:],
                         s[:-1] + s]
    out += partials
    out.append(" ".join(partials))
    return out


QWEN3_SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>",
                  "<tool_call>", "</tool_call>", "<|vision_start|>", "<|fim_prefix|>"]

QWEN3_TEMPLATES = [
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
    "What is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>assistant\n<think>\n\n</think>\n\nThe answer is 4.<|im_end|>\n",
    "<|im_start|>assistant\n<think>\nThe user asks for 2+2. That is 4.\n</think>\n\n4<|im_end|>",
    "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n",
    "<|im_start|><|im_end|><|endoftext|>",
    "<|endoftext|><|endoftext|><|endoftext|>",
    "text<|im_end|>",
    "<|im_start|>text",
    "<|im_start",
    "im_end|>",
    "<|im_start|",
    "<|<|im_start|>|>",
    "<<think>>",
    "< think >",
    "<|IM_START|>",
    "<|endoftext|>\n\n<|im_start|>user\n\u4f60\u597d<|im_end|>",
]


def handcrafted_texts():
    return (ENGLISH + CODE + LINE_ENDINGS + LEADING_TRAILING + NUMBERS + CONTRACTIONS + PUNCTUATION
            + MULTILINGUAL + EMOJI + COMBINING + SPACES + whitespace_runs())


def long_texts():
    """A few texts of several thousand characters: long inputs, long words and long runs (BPE on
    one long word is where a naive merge loop becomes quadratic)."""
    prose = " ".join(ENGLISH[:8])
    mixed = "\n".join(ENGLISH + MULTILINGUAL + EMOJI + NUMBERS + CONTRACTIONS)
    return [
        (prose + "\n\n") * 8 + PYTHON_CODE,
        mixed + "\n" + mixed[: 2000],
        "a" * 3000,
        "".join(str(i) for i in range(1000)),
        ("\u4e2d\u6587" * 500) + (" " * 500) + ("\n" * 100)
        + "\u0645\u0631\u062d\u0628\u0627" * 100,
    ]


# --- random strings ------------------------------------------------------------------------------

# Code points assigned in this Python's Unicode database (Python 3.11: Unicode 14), excluding
# surrogates (not encodable) and private use (no one tokenizes those on purpose).
_ASSIGNED = [cp for cp in range(0x110000)
             if unicodedata.category(chr(cp)) not in ("Cn", "Cs", "Co")]


def _assigned(lo, hi):
    return [chr(cp) for cp in range(lo, hi + 1)
            if unicodedata.category(chr(cp)) not in ("Cn", "Cs", "Co")]


EMOJI_SEQUENCES = [
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466", "\U0001f44d\U0001f3fd",
    "\U0001f1fa\U0001f1f8", "\U0001f1ef\U0001f1f5", "\U0001f3f3\ufe0f\u200d\U0001f308",
    "\u2764\ufe0f", "1\ufe0f\u20e3", "\U0001f9d1\U0001f3ff\u200d\U0001f4bb", "\u200d", "\ufe0f",
]

CHAR_CLASSES = {
    "ascii_letters": list(string.ascii_letters),
    "digits": list(string.digits),
    "ascii_punct": list(string.punctuation),
    "space": [" ", " ", " ", " ", "\t", "\n", "\n", "\r", "\r\n", "\u00a0", "\u3000", "\u200b",
              "\u2003", "\x0b", "\x0c", "\u2028", "\u0085", "\ufeff"],
    "control": [chr(c) for c in range(0x20) if chr(c) not in "\t\n\r"] + ["\x7f", "\x80", "\x9f"],
    "latin_ext": _assigned(0xC0, 0x24F),
    "combining": _assigned(0x300, 0x36F),
    "greek": _assigned(0x370, 0x3FF),
    "cyrillic": _assigned(0x400, 0x4FF),
    "hebrew": _assigned(0x590, 0x5FF),
    "arabic": _assigned(0x600, 0x6FF),
    "devanagari": _assigned(0x900, 0x97F),
    "thai": _assigned(0xE00, 0xE7F),
    "cjk": _assigned(0x4E00, 0x9FFF),
    "kana": _assigned(0x3040, 0x30FF),
    "hangul": _assigned(0xAC00, 0xD7A3) + _assigned(0x1100, 0x11FF),
    "fullwidth": _assigned(0xFF01, 0xFF5E),
    "emoji": _assigned(0x1F300, 0x1FAFF) + EMOJI_SEQUENCES,
    "any": None,  # drawn from _ASSIGNED directly (too large to copy into a list of str)
    "contractions": ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M",
                     "'LL", "'D", "'", "\u2019s"],
}


def random_texts(seed, count, pieces=(), class_names=None, max_len=80):
    """`count` random strings of 0..max_len code points, each mixing one to four character classes
    (all of CHAR_CLASSES, or those named). `pieces` (special tokens and their fragments) form one
    more class, so that added-token matching is hit at random positions too."""
    rng = random.Random(seed)
    classes = {k: v for k, v in CHAR_CLASSES.items() if class_names is None or k in class_names}
    if pieces:
        classes["pieces"] = list(pieces)
    names = sorted(classes)
    out = []
    for _ in range(count):
        length = rng.randint(0, max_len)
        chosen = rng.sample(names, rng.randint(1, 4))
        chars = []
        while len(chars) < length:
            name = rng.choice(chosen)
            if name == "any":
                chars.append(chr(rng.choice(_ASSIGNED)))
            else:
                # Multi-code-point elements (CRLF, ZWJ sequences, specials) are spread into
                # code points; the cut at `length` may split them, which is wanted.
                chars.extend(rng.choice(classes[name]))
        out.append("".join(chars[:length]))
    return out


# ------------------------------------------------------------------------------------------------
# Training corpus for the synthetic tokenizers
# ------------------------------------------------------------------------------------------------

TRAIN_PARAGRAPHS = [
    "Language models read text as a sequence of integer ids. Before a model can see a sentence, "
    "a tokenizer normalizes it, splits it into words, and breaks each word into pieces from a "
    "fixed vocabulary. Byte pair encoding builds that vocabulary by repeatedly merging the most "
    "frequent pair of adjacent symbols in a training corpus.",
    "The weather was cold and bright, and the clocks were striking thirteen. Winston walked "
    "quickly through the glass doors, though not quickly enough to prevent a swirl of gritty "
    "dust from entering along with him. The hallway smelt of boiled cabbage and old rag mats.",
    "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money "
    "in my purse, and nothing particular to interest me on shore, I thought I would sail about a "
    "little and see the watery part of the world.",
    "In the beginning the universe was created. This has made a lot of people very angry and "
    "been widely regarded as a bad move. Don't panic! It's only a towel, and you'll need it; "
    "they're everywhere, we've seen them, I'm sure he'd agree.",
    "Rust, C++, Python and Go are programming languages. Compilers translate source files into "
    "machine code; interpreters execute statements one at a time. Memory safety, performance "
    "and portability are trade-offs every systems programmer weighs.",
    "Revenue grew 12.5% to $3,456,789 in Q3 2023, compared with $3,072,701 a year earlier. "
    "Operating margin was 18.2%, and the board approved a dividend of 0.42 per share payable on "
    "2024-01-15 to holders of record on 2023-12-29.",
    "Der schnelle braune Fuchs springt \u00fcber den faulen Hund. Fran\u00e7ais: le caf\u00e9 est "
    "d\u00e9licieux, n'est-ce pas? Espa\u00f1ol: el ni\u00f1o come ma\u00f1ana. Portugu\u00eas: "
    "a\u00e7\u00e3o e informa\u00e7\u00e3o. Italiano: perch\u00e9 cos\u00ec.",
    "\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c\u6211\u4eec\u4e00\u8d77\u53bb\u516c\u56ed\u6563"
    "\u6b65\u5427\u3002\u8bed\u8a00\u6a21\u578b\u4f7f\u7528\u5206\u8bcd\u5668\u628a\u6587\u672c"
    "\u53d8\u6210\u6570\u5b57\u3002\u4e2d\u6587\u6587\u672c\u5f88\u5e38\u89c1\u3002",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002\u3053\u3093\u306b\u3061"
    "\u306f\u3001\u5143\u6c17\u3067\u3059\u304b\u3002\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8"
    "\uc785\ub2c8\ub2e4. \uc548\ub155\ud558\uc138\uc694, \ubc18\uac11\uc2b5\ub2c8\ub2e4.",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u042d\u0442\u043e "
    "\u0440\u0443\u0441\u0441\u043a\u0438\u0439 \u0442\u0435\u043a\u0441\u0442 \u043e "
    "\u044f\u0437\u044b\u043a\u0435. \u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 "
    "\u03ba\u03cc\u03c3\u03bc\u03b5, \u03b1\u03c5\u03c4\u03cc \u03b5\u03af\u03bd\u03b1\u03b9 "
    "\u03ba\u03b5\u03af\u03bc\u03b5\u03bd\u03bf.",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645\u060c \u0647\u0630"
    "\u0627 \u0646\u0635 \u0639\u0631\u0628\u064a. \u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc"
    "\u05dd. \u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e\u0964 "
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a",
    "Emoji are text too: \U0001f600 \U0001f44d \u2764\ufe0f \U0001f680. Tabs\tand\tnewlines\n"
    "matter in code, and so do runs of spaces:    four, then        eight.",
]

TRAIN_WORDS = (
    "time year people way day man thing woman life child world school state family student "
    "group country problem hand part place case week company system program question work "
    "government number night point home water room mother area money story fact month lot right "
    "study book eye job word business issue side kind head house service friend father power "
    "hour game line end member law car city community name president team minute idea kid body "
    "information back parent face others level office door health person art war history party "
    "result change morning reason research girl guy moment air teacher force education token "
    "model layer tensor vector matrix kernel thread memory buffer cache device stream batch "
    "sequence attention embedding weight gradient optimizer learning training inference decoder "
    "encoder vocabulary merge byte character string integer float double function class method "
    "return import export const static virtual public private struct template namespace include "
    "running walked talking thought believed understanding international internationalization "
    "tokenization normalization pretokenization unbelievable extraordinary responsibility"
).split()


def training_corpus(seed=1234):
    """Hand-written paragraphs, code and the test texts' plain parts, plus sentences made from a
    word list with random numbers, so a BPE trainer finds ~2000 useful merges."""
    rng = random.Random(seed)
    corpus = list(TRAIN_PARAGRAPHS) + [PYTHON_CODE, PYTHON_TABS, CPP_CODE, JSON_TEXT]
    corpus += ENGLISH + CODE + NUMBERS + CONTRACTIONS + MULTILINGUAL + EMOJI
    for _ in range(400):
        words = [rng.choice(TRAIN_WORDS) for _ in range(rng.randint(4, 14))]
        if rng.random() < 0.3:
            words[0] = words[0].capitalize()
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), str(rng.randint(0, 10 ** rng.randint(1, 7))))
        if rng.random() < 0.1:
            words = [w.upper() for w in words]
        corpus.append(" ".join(words) + rng.choice([".", ",", "!", "?", ";", ":", "\n", ""]))
    # Repeat the paragraphs so their words outweigh the random sentences' noise.
    return corpus + TRAIN_PARAGRAPHS * 3


# For the normalizer / pre-tokenizer variants: random text made of what those stages act on
# (their char-level model maps most other characters to [UNK] anyway).
VARIANT_CLASSES = ["ascii_letters", "digits", "ascii_punct", "space", "latin_ext", "combining",
                   "greek", "cjk", "fullwidth", "contractions", "any"]


def synthetic_texts(seed, specials=(), extra=(), n_random=45, long=True, class_names=None):
    """~150 texts for a synthetic tokenizer: a fixed sample of the hand-written corpus, its own
    special-token texts and extra texts, one long text, and random strings (up to 48 code points,
    not 80: random text is most of each file's size, and these folders are many)."""
    rng = random.Random(seed)
    hand = handcrafted_texts()
    texts = rng.sample(hand, 85)
    texts += list(extra)
    if specials:
        texts += special_token_texts(list(specials))[:30]
    if long:
        texts.append(long_texts()[1][:1200])
    pieces = list(specials) + ["'s", "'LL"]
    texts += random_texts(seed + 1, n_random, pieces, class_names, max_len=48)
    return texts


# ------------------------------------------------------------------------------------------------
# Writing and checking goldens
# ------------------------------------------------------------------------------------------------


def _byte_level(text):
    """`text` as ByteLevel writes it: each UTF-8 byte as one character of GPT-2's table."""
    table = _bytes_to_unicode()
    return "".join(table[b] for b in text.encode("utf-8"))


def _bytes_to_unicode():
    """GPT-2's byte -> printable character table, in byte order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


def encode_case(tok, text):
    enc = tok.encode(text, add_special_tokens=True)
    plain = tok.encode(text, add_special_tokens=False)
    return {
        "text": text,
        "ids": enc.ids,
        "ids_no_special": plain.ids,
        "decoded": tok.decode(enc.ids, skip_special_tokens=False),
        "decoded_skip_special": tok.decode(enc.ids, skip_special_tokens=True),
    }


def decode_cases(tok, seed, count=40):
    """Random id sequences (any id, including added tokens) and sequences of single
    byte-level/byte-fallback tokens: the decoders must turn invalid UTF-8 into U+FFFD exactly as
    the library does."""
    rng = random.Random(seed)
    size = tok.get_vocab_size(with_added_tokens=True)
    seqs = [[]] + [[i] for i in range(min(size, 8))]
    seqs += [[rng.randrange(size) for _ in range(rng.randint(1, 24))] for _ in range(count)]
    # Tokens that stand for one byte >= 0x80 (a byte-level alphabet character or <0xNN>), alone
    # and in runs, so truncated sequences and stray continuation bytes are decoded.
    vocab = tok.get_vocab(with_added_tokens=False)
    high = set(_bytes_to_unicode()[0x80:]) | {f"<0x{b:02X}>" for b in range(0x80, 0x100)}
    byte_like = sorted(i for t, i in vocab.items() if t in high)
    if byte_like:
        for _ in range(12):
            seqs.append([rng.choice(byte_like) for _ in range(rng.randint(1, 6))])
    out = []
    for ids in seqs:
        out.append({"ids": ids,
                    "decoded": tok.decode(ids, skip_special_tokens=False),
                    "decoded_skip_special": tok.decode(ids, skip_special_tokens=True)})
    return out


def component_cases(tok, texts):
    """The normalizer and pre-tokenizer outputs alone, for debugging one stage at a time. One
    entry per case of cases.json, in the same order (the text is not repeated, to save space)."""
    out = []
    for text in texts:
        normalized = tok.normalizer.normalize_str(text) if tok.normalizer else text
        pre = ([p for p, _ in tok.pre_tokenizer.pre_tokenize_str(normalized)]
               if tok.pre_tokenizer else [normalized])
        out.append({"normalized": normalized, "pre_tokens": pre})
    return out


def dumps_compact(value, indent=0, width=100):
    """JSON with one item per line, except containers short enough to fit on one line. For
    tokenizer.json this puts one vocab entry or merge per line: small and diffable, where the
    library's own pretty output spends five lines on each merge pair."""
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, (dict, list)) or not value or indent + len(flat) <= width:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {dumps_compact(v, indent + 2, width)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + dumps_compact(v, indent + 2, width) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def save_tokenizer(data, path):
    """Writes a tokenizer (a Tokenizer or its JSON as a dict) in the compact layout."""
    if isinstance(data, Tokenizer):
        data = json.loads(data.to_str())
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(dumps_compact(data) + "\n")
    # Layout only: the library must read back what it was given (it always writes merges as
    # pairs, so "a b" strings are compared as pairs).
    reloaded = json.loads(Tokenizer.from_file(str(path)).to_str())
    expected = json.loads(json.dumps(data))
    expected["model"]["merges"] = [m.split(" ") if isinstance(m, str) else m
                                   for m in expected["model"]["merges"]]
    assert reloaded == expected, f"{path}: layout changed the tokenizer"


def write_cases(path, cases):
    """One case per line: small diffs when regenerated, still one JSON document. Raw UTF-8 (as
    tokenizer.json itself is written); control characters are escaped by json."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("[\n")
        f.write(",\n".join(json.dumps(c, ensure_ascii=False, separators=(",", ":"))
                            for c in cases))
        f.write("\n]\n")


def verify(folder):
    """Reload tokenizer.json from disk and check every golden against it again."""
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    with open(folder / "cases.json", encoding="utf-8") as f:
        cases = json.load(f)
    for case in cases:
        again = encode_case(tok, case["text"])
        if again != case:
            raise SystemExit(f"{folder.name}: golden differs after reload for {case['text']!r}")
    with open(folder / "decode_cases.json", encoding="utf-8") as f:
        for case in json.load(f):
            if (tok.decode(case["ids"], skip_special_tokens=False) != case["decoded"]
                    or tok.decode(case["ids"], skip_special_tokens=True)
                    != case["decoded_skip_special"]):
                raise SystemExit(f"{folder.name}: decode golden differs for {case['ids']}")
    if (folder / "components.json").exists():
        with open(folder / "components.json", encoding="utf-8") as f:
            components = json.load(f)
        if components != component_cases(tok, [c["text"] for c in cases]):
            raise SystemExit(f"{folder.name}: components.json differs after reload")
    return len(cases)


# name -> what the folder covers, in the order written; README.md is made from it.
FOLDERS = {}


def write_folder(out, name, what, tok, texts, seed, components=False):
    """Writes tokenizer.json (unless `tok` is None: already there), cases.json,
    decode_cases.json and optionally components.json, then checks them all after a reload."""
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    if tok is not None:
        save_tokenizer(tok, folder / "tokenizer.json")
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    FOLDERS[name] = f"{what} {tok.get_vocab_size(with_added_tokens=True)} ids in all."
    # Texts are de-duplicated (keeping order) so the case count means something.
    texts = list(dict.fromkeys(texts))
    write_cases(folder / "cases.json", [encode_case(tok, t) for t in texts])
    write_cases(folder / "decode_cases.json", decode_cases(tok, seed))
    if components:
        write_cases(folder / "components.json", component_cases(tok, texts))
    n = verify(folder)
    size = sum(p.stat().st_size for p in folder.iterdir())
    print(f"{name:28s} {n:4d} cases  {size / 1024:8.1f} KiB", flush=True)
    return tok


def from_json(tok, edit):
    """A tokenizer rebuilt from its JSON after `edit(dict)`: for settings the Python API does not
    expose (or exposes only at construction)."""
    data = json.loads(tok.to_str())
    edit(data)
    return Tokenizer.from_str(json.dumps(data, ensure_ascii=False))


# ------------------------------------------------------------------------------------------------
# The tokenizers
# ------------------------------------------------------------------------------------------------


def corpus_alphabet(size):
    """The `size` most frequent characters of training_corpus(), ties broken by code point."""
    counts = {}
    for text in training_corpus():
        for c in text:
            counts[c] = counts.get(c, 0) + 1
    return sorted(sorted(counts, key=lambda c: (-counts[c], c))[:size])


# Vocab sizes: ~2000 for the GPT-2 style, smaller elsewhere to keep the committed files small
# (vocab and merges are most of each tokenizer.json).
def train(tok, vocab_size, alphabet_size=None, **trainer_args):
    """Trains `tok` on training_corpus(). With `alphabet_size`, characters other than the corpus's
    most frequent ones are blanked out of it first, so rare characters (most CJK, emoji) stay
    out of the vocab. The trainer's own limit_alphabet is not used: it breaks frequency ties in
    hash order, so the vocab changed from run to run."""
    corpus = training_corpus()
    if alphabet_size:
        keep = set(corpus_alphabet(alphabet_size))
        corpus = ["".join(c if c in keep else " " for c in text) for text in corpus]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, **trainer_args)
    tok.train_from_iterator(corpus, trainer=trainer)
    return tok


def gpt2_style(add_prefix_space):
    """GPT-2: byte-level with the built-in GPT-2 regex, <|endoftext|> as the one special token.
    Post-processor and decoder as in GPT-2's tokenizer.json (add_prefix_space=True there only
    matters for offsets)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return train(tok, 2000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                 special_tokens=["<|endoftext|>"])


LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                   "<|end_header_id|>", "<|eot_id|>", "<|reserved_special_token_0|>",
                   "<|python_tag|>"]

# Whole pre-tokens put into the llama3 vocab with no merge that builds them. With
# ignore_merges=True a pre-token found in the vocab is emitted as one token before any merge is
# tried; these make that observable (the check in main() asserts that it is).
LLAMA3_UNREACHABLE = [" antidisestablishmentarianism", " Supercalifragilistic",
                      "\u4f60\u597d\u4e16\u754c",
                      "    ", "!!!!", "987", " xyzzy"]


def llama3_style():
    """Llama-3: Split(regex, isolated) + ByteLevel(use_regex=False), ignore_merges, and a
    Sequence[ByteLevel, TemplateProcessing] post-processor adding <|begin_of_text|>, as Meta's
    tokenizer.json has it."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    train(tok, 1200, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())

    def edit(data):
        vocab = data["model"]["vocab"]
        for word in LLAMA3_UNREACHABLE:
            vocab.setdefault(_byte_level(word), len(vocab))
        data["model"]["ignore_merges"] = True

    tok = from_json(tok, edit)
    tok.add_special_tokens(LLAMA3_SPECIALS)
    bos = "<|begin_of_text|>"
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
        processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B:1",
                                      special_tokens=[(bos, tok.token_to_id(bos))]),
    ])
    return tok


SPM_SPECIALS = ["<unk>", "<s>", "</s>"]
SPM_BYTES = [f"<0x{b:02X}>" for b in range(256)]


def spm_style(variant):
    """Llama-2/TinyLlama-style SentencePiece BPE as converted to tokenizer.json: '▁' for spaces,
    <unk>=0 <s>=1 </s>=2, then the 256 byte tokens <0x00>..<0xFF> (ids 3..258) for byte fallback.

    variant: "normalizer" (Prepend+Replace normalizer, no pre-tokenizer: Llama-2's file),
    "metaspace-nosplit" / "metaspace-split" (Metaspace pre-tokenizer, prepend_scheme "first"),
    "unk" (like "normalizer" but no byte fallback: unknown characters become <unk>, fused)."""
    byte_fallback = variant != "unk"
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=byte_fallback, fuse_unk=True))
    # Trained on words (Metaspace split) so no merge crosses a '▁' word start; at run time the
    # normalizer variant then runs BPE on the whole '▁'-joined string, as Llama-2 does.
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always",
                                                 split=True)
    # A small alphabet keeps rare characters (most CJK, emoji) out of the vocab, so they take the
    # byte-fallback (or <unk>) path.
    train(tok, 1200, alphabet_size=150, special_tokens=SPM_SPECIALS + SPM_BYTES)

    def edit(data):
        # The trainer registers its special tokens as added tokens; in Llama-2's file only
        # <unk> <s> </s> are, the byte tokens are plain vocab entries (so "<0x41>" typed in text
        # is not matched as a token).
        data["added_tokens"] = [t for t in data["added_tokens"] if t["content"] in SPM_SPECIALS]
        if not byte_fallback:
            # Without byte fallback the byte tokens would only be dead vocab entries.
            vocab = data["model"]["vocab"]
            for b in SPM_BYTES:
                del vocab[b]
            order = sorted(vocab.items(), key=lambda kv: kv[1])
            data["model"]["vocab"] = {t: i for i, (t, _) in enumerate(order)}
            data["added_tokens"] = [dict(t, id=data["model"]["vocab"][t["content"]])
                                    for t in data["added_tokens"]]

    tok = from_json(tok, edit)
    assert tok.token_to_id("<s>") == 1 and tok.token_to_id("<unk>") == 0
    if byte_fallback:
        assert tok.token_to_id("<0x00>") == 3 and tok.token_to_id("<0xFF>") == 258
    strip_decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                       decoders.Fuse(), decoders.Strip(content=" ", left=1,
                                                                       right=0)])
    if variant in ("normalizer", "unk"):
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"),
                                               normalizers.Replace(" ", "\u2581")])
        tok.pre_tokenizer = None
        tok.decoder = strip_decoder
    elif variant == "metaspace-nosplit":
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first",
                                                     split=False)
        tok.decoder = strip_decoder
    elif variant == "metaspace-split":
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first",
                                                     split=True)
        # The Metaspace decoder (with the same prepend scheme) instead of Replace+Strip. No Fuse
        # before it: Metaspace drops every '▁' of the first token, so fused text would lose all
        # its spaces.
        tok.decoder = decoders.Sequence([decoders.ByteFallback(),
                                         decoders.Metaspace(replacement="\u2581",
                                                            prepend_scheme="first", split=True)])
    else:
        raise ValueError(variant)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s>:1 $B:1", special_tokens=[("<s>", 1)])
    return tok


SPM_TEXTS = ["<s>", "</s>", "<unk>", "<s>Hello</s>", " <s> Hello </s> ", "Hello<s>world",
             "<0x41><0xFF> typed byte tokens are text", "\u2581already\u2581meta\u2581spaced",
             "\u2581", "\u2581\u2581 \u2581", "\U0001f916 robot \U0001fae0 melting \u9f98 \u9f49",
             "\u3400\u4dbf \U00020001 rare CJK"]


def char_bpe_base(vocab_size=600, prefix=None, suffix=None):
    """A character-level BPE for the normalizer / pre-tokenizer variants: whitespace-split
    training, [UNK] for characters outside its alphabet."""
    affixes = {}
    if prefix:
        affixes["continuing_subword_prefix"] = prefix
    if suffix:
        affixes["end_of_word_suffix"] = suffix
    # The model and the trainer both take the affixes: the trainer builds the vocab with them,
    # the model needs them at encode time.
    tok = Tokenizer(models.BPE(unk_token="[UNK]", **affixes))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    # The trainer gives the affixed alphabet ("##a", "a</w>") ids in hash order, and breaks ties
    # between equally frequent merges by id, so vocab and merges changed from run to run. Passed
    # in first, in a fixed order, as special tokens, they have fixed ids; they are then taken off
    # the added tokens again (they are plain vocab entries, as in a real vocab).
    affixed = [(prefix or "") + c + (suffix or "") for c in corpus_alphabet(300)
               if not c.isspace()] if affixes else []
    # (The affixed alphabet counts in vocab_size: keep ~300 merges either way.)
    train(tok, vocab_size + len(affixed), alphabet_size=300, special_tokens=["[UNK]"] + affixed,
          **affixes)

    def drop_affixed(data):
        data["added_tokens"] = [t for t in data["added_tokens"] if t["content"] == "[UNK]"]

    return from_json(tok, drop_affixed)


def with_pipeline(base, normalizer=None, pre_tokenizer=None, decoder=None):
    """A copy of `base` with another normalizer / pre-tokenizer / decoder."""
    tok = Tokenizer.from_str(base.to_str())
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoder
    return tok


SPLIT_BEHAVIORS = ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]

PRETOK_TEXTS = ["a-b--c---d", "-start and end-", "one, two,, three,,,", "x1y22z333",
                "a 1 22 333 4444", "Hello!!! How are you??", "a.b", "--", "-", "\u00bfqu\u00e9?",
                "foo_bar baz-qux", "\u4e2d\u6587\u3002\u6d4b\u8bd5\uff01", "tabs\tand\nlines"]

NORM_TEXTS = ["  Leading and trailing  ", "MiXeD CaSe \u00c9T\u00c9 \u0130\u0131",
              "\ufb01\ufb02 \u2460 \u00bd", "\uff21\uff22\uff23\uff11\uff12\uff13",
              "cafe\u0301 caf\u00e9 na\u00efve r\u00e9sum\u00e9",
              "\u00c5ngstr\u00f6m \u212b", "many     spaces\t\ttabs\n\nnewlines", "\u1e9b\u0323",
              "\u0130stanbul STRASSE Stra\u00dfe \u03a3\u0399\u03a3\u03a5\u03a6\u039f\u03a3"]


def added_tokens_tokenizer(base, normalizer):
    """Every AddedToken option on one tokenizer. `base` supplies the model and pipeline;
    `normalizer` is one that changes text (so normalized=True vs False is observable)."""
    tok = Tokenizer.from_str(base.to_str())
    tok.normalizer = normalizer
    tok.add_special_tokens([
        AddedToken("[MASK]", lstrip=True, special=True, normalized=False),
        AddedToken("<rs>", rstrip=True, special=True, normalized=False),
        AddedToken("<both>", lstrip=True, rstrip=True, special=True, normalized=False),
        AddedToken("<Norm>", special=True, normalized=True),
        AddedToken("<x>", special=True, normalized=False),
        AddedToken("<x><y>", special=True, normalized=False),
    ])
    tok.add_tokens([
        AddedToken("word", single_word=True, normalized=False),
        AddedToken("Hello World", normalized=True),
        AddedToken("New York", normalized=False),
        AddedToken("foo", normalized=False),
        AddedToken("foobar", normalized=False),
        AddedToken("abc", normalized=False),
        AddedToken("bcd", normalized=False),
        AddedToken("CaseKept", normalized=False),
        AddedToken("MiXeD", normalized=True),
        AddedToken("\t\t", normalized=False),
        AddedToken("<nl>", lstrip=True, rstrip=True, single_word=True, normalized=False),
        # Already in the model's vocab: the added token takes the model's id.
        AddedToken("the", normalized=False),
    ])
    return tok


ADDED_TEXTS = [
    "I saw a [MASK] here", "[MASK]", "a   [MASK]   b", "a\n\t [MASK]", "[MASK][MASK]", " [MASK] ",
    "x<rs>   y", "<rs>\n\nend", "a <rs> b", "a   <both>   b", "<both>", "\n<both>\n",
    "<Norm> <norm> <NORM>", "<x><y> <x> <y> <x><x><y>", "<x><y", "word words sword word. a word",
    "(word) _word word_ word1 1word", "say Hello World, hello world, HELLO WORLD, Hello  World",
    "New York new york NewYork New  York", "foobar foo foobaz fo foofoobar", "abcd bcd abc ab",
    "CaseKept casekept CASEKEPT", "MiXeD mixed MIXED", "a\t\tb\t\t\tc\t", "x <nl> y", "x<nl>y",
    "<nl>", "the then other the", "THE The",
    # single_word asks regex \w of the neighbours: a mark or joiner blocks the token, a
    # superscript digit does not.
    "a <nl>\u0301 b", "a <nl>\u00b2 b", "a <nl>\u0903 b", "a\u0301 <nl> b", "a <nl>\u200d b",
    "word\u203f word\u00bd",
    # Lowercase is Unicode 16.0's (Garay capitals lowercase), character by character.
    "\u0259\U00010d56 \U00010d50\U00010d65", "\u0130stanbul \u212a \u0391\u03a3",
]

ADDED_PIECES = ["[MASK]", "<rs>", "<both>", "<Norm>", "<x>", "<x><y>", "word", "Hello World",
                "New York", "foo", "foobar", "abc", "bcd", "CaseKept", "MiXeD", "\t\t", "<nl>"]


def strings_merges(tok):
    """The same tokenizer with merges in the legacy "a b" string form (what tokenizers < 0.20
    wrote and many Hub files still hold). Safe here: no token in these vocabs holds a space."""

    def edit(data):
        merges = data["model"]["merges"]
        assert all(" " not in a and " " not in b for a, b in merges)
        data["model"]["merges"] = [f"{a} {b}" for a, b in merges]

    data = json.loads(tok.to_str())
    edit(data)
    return data


# ------------------------------------------------------------------------------------------------


def qwen3(out, src):
    folder = out / "qwen3"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(src / name, folder / name)
    pieces = QWEN3_SPECIALS + ["<|im_start", "im_end|>", "<think", "think>", "<|", "|>"]
    texts = (handcrafted_texts() + special_token_texts(QWEN3_SPECIALS) + QWEN3_TEMPLATES
             + long_texts() + random_texts(20240601, 250, pieces))
    write_folder(out, "qwen3", "The real Qwen3 tokenizer (copied with its tokenizer_config.json): "
                 "NFC normalizer, Split(regex, isolated) + ByteLevel(use_regex=False), "
                 "ByteLevel post-processor and decoder, 151k vocab, special and non-special "
                 "added tokens (<think> is not special). The whole hand-written corpus, special "
                 "tokens every way (and partial ones), chat templates, 5 long texts, 250 random "
                 "strings of 0..80 code points.", None, texts, seed=7)


def synthetic(out):
    gpt2 = gpt2_style(add_prefix_space=False)
    write_folder(out, "gpt2-bytelevel", "GPT-2 style: ByteLevel pre-tokenizer (GPT-2 regex, "
                 "add_prefix_space=False), ByteLevel decoder and post-processor, vocab of 256 byte "
                 "characters + merges, <|endoftext|> special.",
                 gpt2, synthetic_texts(101, ["<|endoftext|>"]), 101)
    write_folder(out, "gpt2-bytelevel-prefix-space", "As gpt2-bytelevel (trained the same way) "
                 "with add_prefix_space=True in the ByteLevel pre-tokenizer: a space is added "
                 "before the text (and kept by decode). Post-processor and decoder as GPT-2's "
                 "own file has them (their add_prefix_space does not change ids or text).",
                 gpt2_style(add_prefix_space=True), synthetic_texts(102, ["<|endoftext|>"]), 102)

    llama3 = llama3_style()
    llama3_texts = synthetic_texts(103, LLAMA3_SPECIALS, extra=[
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
        "the antidisestablishmentarianism of Supercalifragilistic \u4f60\u597d\u4e16\u754c",
        "if x:\n    y = 1\n        z = 987 !!!! xyzzy 9876543",
        "a    b", "!!!!!", "987987"])
    write_folder(out, "llama3-bytelevel", "Llama-3 style: Sequence[Split(Llama-3 regex, "
                 "isolated), ByteLevel(use_regex=False)], BPE with ignore_merges=True (the vocab "
                 "also holds whole pre-tokens no merge builds, e.g. ' xyzzy', '987', so "
                 "ignore_merges changes the ids of some cases), post-processor "
                 "Sequence[ByteLevel, TemplateProcessing(<|begin_of_text|> $A)], 7 added special "
                 "tokens after the vocab.", llama3, llama3_texts, 103)
    # ignore_merges must change something, or the folder would not test it.
    check = from_json(llama3, lambda d: d["model"].update(ignore_merges=False))
    assert any(check.encode(t).ids != llama3.encode(t).ids for t in llama3_texts)

    spm_what = ("SentencePiece/Llama-2 style BPE: <unk>=0 <s>=1 </s>=2 (the only added tokens), "
                "<0x00>..<0xFF> = 3..258 as plain vocab entries, byte_fallback=True, "
                "unk_token <unk>, fuse_unk=True, TemplateProcessing(<s> $A), trained with a "
                "150-character alphabet so rare CJK, emoji etc. take byte fallback. ")
    strip_decoder = "Decoder Sequence[Replace('▁',' '), ByteFallback, Fuse, Strip(' ', 1, 0)]."
    spm = spm_style("normalizer")
    write_folder(out, "spm-llama2", spm_what + "Normalizer Sequence[Prepend('▁'), Replace(' ', "
                 "'▁')] and no pre-tokenizer (as Llama-2/TinyLlama's tokenizer.json). "
                 + strip_decoder, spm, synthetic_texts(104, SPM_SPECIALS, SPM_TEXTS), 104)
    write_folder(out, "spm-metaspace-nosplit", spm_what + "No normalizer; pre-tokenizer "
                 "Metaspace('▁', prepend_scheme='first', split=False). " + strip_decoder,
                 spm_style("metaspace-nosplit"), synthetic_texts(105, SPM_SPECIALS, SPM_TEXTS),
                 105)
    write_folder(out, "spm-metaspace-split", spm_what + "No normalizer; pre-tokenizer "
                 "Metaspace('▁', prepend_scheme='first', split=True). Decoder "
                 "Sequence[ByteFallback, Metaspace('▁', 'first', split=True)].",
                 spm_style("metaspace-split"), synthetic_texts(106, SPM_SPECIALS, SPM_TEXTS), 106)
    write_folder(out, "spm-unk-fuse", "As spm-llama2 but byte_fallback=False and no byte "
                 "tokens: characters outside the vocab become <unk>, runs of them fused into one "
                 "(fuse_unk=True).", spm_style("unk"),
                 synthetic_texts(107, SPM_SPECIALS, SPM_TEXTS), 107)

    def variant(name, what, seed, base, normalizer=None, pre_tokenizer=None, decoder=None,
                extra=PRETOK_TEXTS):
        """One normalizer / pre-tokenizer configuration on a shared char-level model, with
        components.json so each stage can be checked alone."""
        texts = synthetic_texts(seed, extra=extra, n_random=50, long=False,
                                class_names=VARIANT_CLASSES)
        write_folder(out, name, what + " Char-level BPE ([UNK] for characters outside its "
                     "300-character alphabet); has components.json.",
                     with_pipeline(base, normalizer, pre_tokenizer, decoder), texts, seed,
                     components=True)

    # --- normalizers -----------------------------------------------------------------------------
    variant("norm-nfkc-lower-strip-prefix", "Normalizer Sequence[NFKC, Lowercase, Strip(both), "
            "Replace(Regex('\\s+'), ' ')], pre-tokenizer Whitespace, BPE with "
            "continuing_subword_prefix '##', decoder WordPiece('##', cleanup=True).",
            110, char_bpe_base(prefix="##"),
            normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase(),
                                  normalizers.Strip(left=True, right=True),
                                  normalizers.Replace(Regex(r"\s+"), " ")]),
            pre_tokenizers.Whitespace(), decoders.WordPiece(prefix="##", cleanup=True),
            extra=NORM_TEXTS)
    variant("norm-nfd-stripaccents-suffix", "Normalizer Sequence[NFD, StripAccents, "
            "Lowercase], pre-tokenizer WhitespaceSplit, BPE with end_of_word_suffix '</w>', "
            "decoder BPEDecoder('</w>').", 111, char_bpe_base(suffix="</w>"),
            normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(),
                                  normalizers.Lowercase()]),
            pre_tokenizers.WhitespaceSplit(), decoders.BPEDecoder(suffix="</w>"),
            extra=NORM_TEXTS)

    # --- pre-tokenizers --------------------------------------------------------------------------
    base = char_bpe_base()
    variant("pretok-whitespace-digits-punct", "Pre-tokenizer Sequence[Whitespace, "
            "Digits(individual_digits=True), Punctuation(isolated)]; no normalizer, no decoder "
            "(decode joins tokens with spaces).", 120, base, None,
            pre_tokenizers.Sequence([pre_tokenizers.Whitespace(),
                                     pre_tokenizers.Digits(individual_digits=True),
                                     pre_tokenizers.Punctuation()]))
    for i, behavior in enumerate(SPLIT_BEHAVIORS):
        # One folder per behaviour, each split in it with that behaviour: a string pattern
        # ("-"), a regex one (digit and whitespace runs), then Punctuation (",", "!", and the
        # "-" pieces the first split kept). components.json shows each case's pieces.
        variant(f"pretok-split-{behavior.replace('_', '-')}",
                f"Pre-tokenizer Sequence[Split('-', {behavior}), Split(Regex('\\d+|\\s+'), "
                f"{behavior}), Punctuation({behavior})]; no normalizer, no decoder.",
                140 + i, base, None,
                pre_tokenizers.Sequence([
                    pre_tokenizers.Split("-", behavior=behavior),
                    pre_tokenizers.Split(Regex(r"\d+|\s+"), behavior=behavior),
                    pre_tokenizers.Punctuation(behavior=behavior)]))
    # (With "isolated", invert changes nothing: matches and the rest are all kept as pieces.)
    for i, behavior in enumerate(["removed", "merged_with_next"]):
        variant(f"pretok-split-invert-{behavior.replace('_', '-')}",
                f"Pre-tokenizer Split(Regex('\\p{{L}}+'), {behavior}, invert=True): the letter "
                "runs are the delimiters' complement; no normalizer, no decoder.",
                150 + i, base, None,
                pre_tokenizers.Split(Regex(r"\p{L}+"), behavior=behavior, invert=True))

    # --- added tokens ----------------------------------------------------------------------------
    added_what = ("Added tokens with every option: [MASK] lstrip, <rs> rstrip, <both> and <nl> "
                  "lstrip+rstrip (<nl> also single_word), word single_word, <Norm> special "
                  "normalized, MiXeD and 'Hello World' (has a space) non-special normalized, "
                  "'New York', CaseKept, tab-tab non-special not normalized, <x> and <x><y> / foo "
                  "and foobar (prefix of another: leftmost-longest), abc and bcd (overlapping), "
                  "'the' (already in the vocab: takes the vocab's id). ")
    write_folder(out, "added-tokens-bytelevel", added_what + "On gpt2-bytelevel with a "
                 "Lowercase normalizer.", added_tokens_tokenizer(gpt2, normalizers.Lowercase()),
                 synthetic_texts(160, ADDED_PIECES, ADDED_TEXTS), 160)
    write_folder(out, "added-tokens-spm", added_what + "On spm-llama2 (its Prepend+Replace "
                 "normalizer: normalized tokens are matched after spaces became '▁').",
                 added_tokens_tokenizer(spm, spm.normalizer),
                 synthetic_texts(161, ADDED_PIECES + SPM_SPECIALS, ADDED_TEXTS), 161)

    # --- merges formats ---------------------------------------------------------------------------
    # gpt2-bytelevel and spm-llama2 above hold merges as [a, b] pairs (what this version writes);
    # these two hold the same tokenizers with "a b" strings and must encode identically.
    for name in ("gpt2-bytelevel", "spm-llama2"):
        legacy = f"{name}-merges-strings"
        (out / legacy).mkdir(exist_ok=True)
        with open(out / name / "tokenizer.json", encoding="utf-8") as f:
            save_tokenizer(strings_merges(Tokenizer.from_str(f.read())),
                           out / legacy / "tokenizer.json")
        FOLDERS[legacy] = (f"{name} with its merges in the legacy \"a b\" string form (the other "
                           "folders hold [a, b] pairs, as tokenizers >= 0.20 writes). Same "
                           f"cases.json and decode_cases.json as {name}: the library reads both "
                           "forms to the same tokenizer.")
        for cases in ("cases.json", "decode_cases.json"):
            shutil.copyfile(out / name / cases, out / legacy / cases)
        n = verify(out / legacy)
        print(f"{legacy:28s} {n:4d} cases (same goldens as {name})")


README = """# Tokenizer goldens

Made by `scripts/goldens/make_tokenizer_goldens.py` with Hugging Face `tokenizers` {version}
(Python {python}, Unicode {unicode} for the random text) from PyPI. To regenerate everything
(a few seconds, single-threaded; the Qwen3 files come from the shared assets):

    pip install tokenizers=={version}
    python3 scripts/goldens/make_tokenizer_goldens.py

The script is deterministic (fixed seeds) and checks every file it writes by reloading
`tokenizer.json` with `Tokenizer.from_file` and encoding / decoding again.

## Files in each folder

* `tokenizer.json`: the tokenizer. The synthetic ones are written one vocab entry or merge per
  line (the library reads them back to exactly what it wrote).
* `cases.json`: a list of `{{"text", "ids", "ids_no_special", "decoded", "decoded_skip_special"}}`:
  `ids` = `encode(text, add_special_tokens=True).ids`, `ids_no_special` = the same with
  `add_special_tokens=False`, `decoded` = `decode(ids, skip_special_tokens=False)`,
  `decoded_skip_special` = `decode(ids, skip_special_tokens=True)`. One case per line.
* `decode_cases.json`: `{{"ids", "decoded", "decoded_skip_special"}}` for random id sequences
  (any id, added tokens included) and runs of tokens that stand for one byte >= 0x80: decoding
  must turn invalid UTF-8 into U+FFFD exactly as the library does (Rust's `from_utf8_lossy` for
  ByteLevel; one U+FFFD per byte for ByteFallback).
* `components.json` (the `norm-*` and `pretok-*` folders): `{{"normalized", "pre_tokens"}}` for
  each case of `cases.json`, same order: the normalizer's output and the pre-tokenizer's pieces
  for the whole text, without added-token splitting, to check one stage at a time.

Texts are raw UTF-8 in the JSON (control characters escaped), and include NUL, lone CR, U+2028,
BOM, unpaired combining marks and strings cut in the middle of a ZWJ or CRLF sequence.

## Folders

{folders}

Other files here (such as `qwen3/public_cases.json`) are not made by this script.

## What the library did not support / notes

{notes}
"""

NOTES = """\
* Every configuration asked for is supported by tokenizers {version}; nothing was skipped.
* `Split` with `invert=True` and the `isolated` behaviour gives the same pieces as
  `invert=False` (matches and non-matches are all kept), so only `removed` and
  `merged_with_next` are written inverted.
* The synthetic vocabularies are small (600..2000) and trained on a few KB of text, so most
  words split into several tokens: that is intended, it exercises the merge loop.
* A BPE model without `unk_token` silently drops characters it does not know; all the synthetic
  models here have an unk token or byte fallback, so no golden depends on that.
* The Metaspace decoder drops every '▁' of the first token it gets, so it must not follow
  Fuse (spm-metaspace-split uses ByteFallback then Metaspace).
* In added-tokens-spm, normalized added tokens are matched in the normalized text, where spaces
  are already '▁' and each segment between added tokens got its own Prepend('▁'): the goldens
  show what the library does there, quirks included.
* Sizes: qwen3/tokenizer.json alone is {qwen3_mib:.1f} MiB; the whole folder is {total_mib:.1f} MiB
  (README.md aside)."""


def write_readme(out):
    folders = "\n".join(f"* `{name}/`: {what}" for name, what in FOLDERS.items())
    qwen3_mib = (out / "qwen3/tokenizer.json").stat().st_size / 2 ** 20
    readme_path = out / "README.md"
    total_mib = sum(p.stat().st_size for p in out.rglob("*")
                    if p.is_file() and p != readme_path) / 2 ** 20
    version = tokenizers.__version__
    notes = NOTES.format(version=version, qwen3_mib=qwen3_mib, total_mib=total_mib)
    text = README.format(version=version, python=sys.version.split()[0],
                         unicode=unicodedata.unidata_version, folders=folders, notes=notes)
    readme_path.write_text(text, encoding="utf-8")
    return total_mib


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "tests/data/tokenizers")
    parser.add_argument("--qwen3-dir", type=Path,
                        default=REPO.parent / "shared/assets/qwen3-tokenizer")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"tokenizers {tokenizers.__version__}, Python {sys.version.split()[0]}, "
          f"Unicode {unicodedata.unidata_version}")
    qwen3(args.out, args.qwen3_dir)
    synthetic(args.out)
    # Left alone, but worth a look: stale output of an earlier version, or someone else's.
    others = [p.name for p in args.out.iterdir() if p.is_dir() and p.name not in FOLDERS]
    if others:
        print(f"note: folders not made by this script in {args.out}: {others}")
    print(f"total {write_readme(args.out):.2f} MiB")


if __name__ == "__main__":
    main()
