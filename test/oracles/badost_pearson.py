#!/usr/bin/python3
"""Oracle for the bad-ost tests: scipy.stats.pearsonr on given pairs of vectors.

stdin: JSON list of {"x": [...], "y": [...]}; stdout: JSON list of {"r": r, "p": p}.
"""
import json
import sys

from scipy.stats import pearsonr


def main():
    out = []
    for c in json.load(sys.stdin):
        r, p = pearsonr(c["x"], c["y"])
        out.append({"r": float(r), "p": float(p)})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
