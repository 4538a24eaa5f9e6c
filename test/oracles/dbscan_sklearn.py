#!/usr/bin/env python3
"""Oracle for the DBSCAN tests: scikit-learn's DBSCAN on the cases read from
stdin as JSON [{"points": [[x, y, ...], ...], "eps": E, "min_samples": M}, ...];
prints [{"labels": [...], "core": [indices]}, ...] (default algorithm and metric)."""
import json
import sys

import numpy as np
from sklearn.cluster import DBSCAN

out = []
for case in json.load(sys.stdin):
    X = np.asarray(case["points"], dtype=float)
    db = DBSCAN(eps=case["eps"], min_samples=case["min_samples"]).fit(X)
    out.append({"labels": [int(v) for v in db.labels_],
                "core": [int(v) for v in db.core_sample_indices_]})
json.dump(out, sys.stdout)
