#!/usr/bin/env python3
"""Writes a deterministic ~1 MB mixed-language text (prose in several scripts, code, numbers,
emoji, whitespace runs) for the tokenizer benchmark."""
import random
import sys

PARTS = [
    "The quick brown fox jumps over the lazy dog while Intel GPUs are running inference. ",
    "Les accélérateurs Intel Gaudi exécutent PyTorch avec une efficacité remarquable. ",
    "Der schnelle braune Fuchs springt über den faulen Hund; Straße, Größe, Ärger. ",
    "日本語のテキストです。東京は日本の首都であり、多くの人が住んでいます。",
    "机器学习模型在图形处理器上运行得更快，这是一个众所周知的事实。",
    "한국어 텍스트를 토큰화합니다. 서울은 대한민국의 수도입니다. ",
    "Привет, мир! Это тестовый текст на русском языке. ",
    "مرحبا بالعالم، هذا نص تجريبي باللغة العربية. ",
    "नमस्ते दुनिया, यह हिंदी में एक परीक्षण पाठ है। ",
    "emoji 🤗🚀👩‍💻🇯🇵 and ñandú café naïve résumé. ",
    "def f(x):\n    return x ** 2 + 3.14159 * x - 1234567\n\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }\n",
    '{"name": "anvil", "version": [0, 1, 0], "ok": true}\n',
    "numbers 1234567 and 3.14159 and 2026-11-30T07:10:00Z\n",
    "don't I'm we'll THEY'RE it's    multiple   spaces\t\ttabs\r\n",
]


def main():
    rng = random.Random(1234)
    out, size = [], 0
    while size < 1_000_000:
        p = rng.choice(PARTS)
        out.append(p)
        size += len(p.encode("utf-8"))
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        f.write("".join(out))


if __name__ == "__main__":
    main()
