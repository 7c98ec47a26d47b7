#!/usr/bin/env python3
"""transformers' adaptive assistant confidence threshold, the arithmetic alone: for lists of
drafted tokens' probabilities (float32, as the assistant's softmax gives them) and whether each
was kept, the threshold AssistedCandidateGenerator.update_candidate_strategy picks
(sklearn.metrics.roc_curve, then the first minimum of fpr + 3 * fnr). Cases: hand-made ones
(ties of probability between a kept and a rejected token, equal costs, the last point best),
then random ones with few distinct values (ties) and with many.
Writes tests/data/extra/roc-thresholds.json: {"sklearn": version, "cases": [{probs, matches,
threshold}, ...]}, threshold null for +inf.
Usage: make_roc_threshold_goldens.py TESTS_DATA_DIR (scikit-learn 1.9.1, numpy 2)"""
import json
import math
import sys

import numpy as np
import sklearn
from sklearn.metrics import roc_curve


def threshold(matches, probs):
    fpr, tpr, thresholds = roc_curve(matches, probs)  # as transformers calls it
    fnr = 1 - tpr
    costs = fpr + 3 * fnr
    return float(thresholds[np.argmin(costs)])


def main():
    rng = np.random.default_rng(7)
    cases = [
        ([0.9, 0.8, 0.7, 0.6, 0.5, 0.4], [1, 0, 1, 0, 1, 0]),
        ([0.5, 0.5, 0.5, 0.5, 0.5, 0.2], [1, 0, 1, 1, 0, 0]),
        ([0.9, 0.8, 0.7, 0.6, 0.5, 0.4], [1, 0, 1, 1, 1, 1]),
        ([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [1, 1, 1, 0, 0, 0]),
        ([0.99, 0.6, 0.6, 0.3, 0.3, 0.01, 0.01], [1, 1, 0, 1, 0, 1, 0]),
        ([1e-6, 3e-6, 2e-6, 1e-6, 5e-7, 4e-6], [0, 1, 0, 1, 0, 0]),
    ]
    for n, levels in [(6, 2), (7, 3), (12, 3), (20, 4), (40, 6), (60, 0), (200, 0), (500, 12)]:
        for _ in range(4):
            if levels:
                values = rng.random(levels)
                probs = values[rng.integers(0, levels, n)]
            else:
                probs = rng.random(n) ** 3
            matches = (rng.random(n) < probs * 0.8 + 0.1).astype(int)
            matches[0], matches[1] = 1, 0  # both kinds, as transformers requires
            cases.append((probs.tolist(), matches.tolist()))
    out = []
    for probs, matches in cases:
        p32 = np.asarray(probs, dtype=np.float32).tolist()  # softmax(...)[ids].tolist()
        t = threshold(matches, p32)
        out.append({"probs": p32, "matches": matches, "threshold": None if math.isinf(t) else t})
    with open(f"{sys.argv[1]}/extra/roc-thresholds.json", "w") as f:
        json.dump({"sklearn": sklearn.__version__, "cases": out}, f)
        f.write("\n")
    print(len(out), "cases")


if __name__ == "__main__":
    main()
