"""An independent computation of eval's metrics (pipeline/cli/metrics.h) from classify --probs.

Usage: calibration.py EVAL_JSON CLASSIFY_CSV [COPY0_CSV | --key A.B]
(--key A.B: the metrics are the JSON's member A's member B, as tune's "heldout"."chosen".)
CLASSIFY_CSV: `ttapipe classify --probs` over the same images exported as NNNNN_labelK.png; the
label comes from the name. Checks accuracy, NLL, Brier, ECE (15 bins, each bin's count, mean
confidence and accuracy) and the AUROC of 1 - confidence, entropy and spread against eval's
JSON (probabilities in the CSV have 7 decimals: 2e-5 of slack); with COPY0_CSV (the same with
--tta 1), copy 0's accuracy. Exits 1 on a mismatch, printing it."""
import csv
import json
import math
import re
import sys


def rows_of(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        label = int(re.search(r"_label(\d+)\.png$", r["path"]).group(1))
        probs = [float(r[k]) for k in r if k.startswith("p_")]
        out.append((label, int(r["class"]), float(r["spread"]), probs))
    return out


def auroc(scores, wrong):
    """Mann-Whitney by brute force over the pairs: independent of eval's ranking."""
    bad = [s for s, w in zip(scores, wrong) if w]
    good = [s for s, w in zip(scores, wrong) if not w]
    if not bad or not good:
        return -1.0
    wins = sum(1.0 if b > g else 0.5 if b == g else 0.0 for b in bad for g in good)
    return wins / (len(bad) * len(good))


def main():
    want = json.load(open(sys.argv[1]))
    key = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--key" else None
    for part in key.split(".") if key else []:
        want = want[part]
    rows = rows_of(sys.argv[2])
    n, failures = len(rows), []

    def near(name, got, expected, slack=2e-5):
        if abs(got - expected) > slack:
            failures.append(f"{name}: eval {expected:.9f}, computed {got:.9f}")

    wrong = [c != label for label, c, _, _ in rows]
    near("accuracy", sum(not w for w in wrong) / n, want["accuracy"], 1e-8)
    nll = sum(-math.log(max(p[label], 1e-12)) for label, _, _, p in rows) / n
    brier = sum(sum((v - (k == label)) ** 2 for k, v in enumerate(p)) for label, _, _, p in rows) / n
    near("nll", nll, want["nll"], 1e-4)  # a small probability's 7 decimals: some slack
    near("brier", brier, want["brier"])
    bins = [[0, 0.0, 0] for _ in range(15)]
    conf = []
    for (label, c, _, p), w in zip(rows, wrong):
        best = max(p)
        conf.append(best)
        b = min(max(math.ceil(best * 15) - 1, 0), 14)
        bins[b][0] += 1
        bins[b][1] += best
        bins[b][2] += not w
    ece = sum(cnt / n * abs(right / cnt - s / cnt) for cnt, s, right in bins if cnt)
    near("ece", ece, want["ece"], 1e-4)
    for b, ((cnt, s, right), w) in enumerate(zip(bins, want["bins"])):
        if cnt != w["count"]:
            failures.append(f"bin {b}: eval {w['count']} images, computed {cnt}")
        elif cnt:
            near(f"bin {b} confidence", s / cnt, w["confidence"])
            near(f"bin {b} accuracy", right / cnt, w["accuracy"], 1e-8)
    entropy = [-sum(v * math.log(v) for v in p if v > 0) for _, _, _, p in rows]
    near("auroc 1 - confidence", auroc([1 - c for c in conf], wrong), want["auroc"]["one_minus_confidence"], 2e-3)
    near("auroc entropy", auroc(entropy, wrong), want["auroc"]["entropy"], 2e-3)
    near("auroc spread", auroc([s for _, _, s, _ in rows], wrong), want["auroc"]["spread"], 2e-3)
    if len(sys.argv) > 3 and not key:
        alone = rows_of(sys.argv[3])
        near("copy 0 accuracy", sum(c == label for label, c, _, _ in alone) / n, want["copy0_accuracy"], 1e-8)
    for f in failures:
        print("FAIL:", f)
    print(f"calibration: {n} images; accuracy {want['accuracy']:.4f}, NLL {nll:.4f}, Brier {brier:.4f}, "
          f"ECE {ece:.4f}; {'all agree' if not failures else str(len(failures)) + ' mismatches'}")
    sys.exit(1 if failures else 0)


main()
