#!/usr/bin/python3
"""Oracle for `bad-ost --job --store`: TOKIO's darshan_bad_ost correlation
computed with scipy.stats.pearsonr straight from a per-file table.

Per file: performance = bytes / seconds; per OST: the file's share on it,
1 / (number of OSTs of the file) when striped over it, else 0. For each OST
whose share is not the same for every file, pearsonr(performance, share).

usage: badost_table.py TABLE.csv  (file,bytes,seconds,osts; osts ';'-separated)
stdout: JSON {"OST": {"r": r, "p": p}, ...}
"""
import csv
import json
import sys

from scipy.stats import pearsonr


def main():
    perf, osts = [], []
    with open(sys.argv[1], newline="") as f:
        for row in csv.DictReader(f):
            perf.append(float(row["bytes"]) / float(row["seconds"]))
            osts.append([int(o) for o in row["osts"].split(";") if o])
    out = {}
    for ost in sorted({o for os_ in osts for o in os_}):
        share = [1.0 / len(os_) if ost in os_ else 0.0 for os_ in osts]
        if len(set(share)) < 2:
            continue
        r, p = pearsonr(perf, share)
        out[str(ost)] = {"r": float(r), "p": float(p)}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
