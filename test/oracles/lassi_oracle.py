#!/usr/bin/python3
"""Independent LASSi computation with pandas (the oracle).

usage: lassi_oracle.py RECORDS.jsonl APPS.tsv ALPHA WINDOW_S FROM_S TO_S HISTORY_FROM_S
RECORDS: iosonar.oss/mds/jobstats JSON lines; APPS: job_id<TAB>command line.
Prints JSON: fs_windows, app_windows (risk_oss, risk_mds, read_kb_ops, write_kb_ops), fs_stats.
"""
import json
import sys
from datetime import datetime, timedelta

import numpy as np
import pandas as pd

OSS = ["read_kb", "read_ops", "write_kb", "write_ops", "other"]
OSS_F = ["oss.read_bytes", "oss.read_ops", "oss.write_bytes", "oss.write_ops", "oss.other_ops"]
MDS = ["open", "close", "getattr", "setattr", "mkdir", "rmdir", "mknod", "link", "unlink", "rename",
       "getxattr", "setxattr", "statfs", "sync", "crossdir_rename", "samedir_rename"]
MDS_F = ["mds." + m for m in MDS]


def main():
    path, apps_path = sys.argv[1], sys.argv[2]
    alpha, window = float(sys.argv[3]), int(sys.argv[4])
    t_from, t_to, h_from = (int(x) for x in sys.argv[5:8])
    apps = {}
    with open(apps_path) as f:
        for line in f:
            if line.strip():
                j, c = line.rstrip("\n").split("\t", 1)
                apps[j] = c
    rows = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("lustre.reset"):
                continue
            ts = datetime.strptime(r["@timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ")
            # A server record covers [@timestamp - lustre.elapsed_ns, @timestamp);
            # it goes to the window holding the middle of that interval, or,
            # without elapsed_ns, the instant just before @timestamp (ns).
            ms = (ts - datetime(1970, 1, 1)) // timedelta(milliseconds=1)
            el = r.get("lustre.elapsed_ns") or 0
            t = ms * 1000000 - (el // 2 if el > 0 else 1)
            fs = r.get("lustre.fs") or r["lustre.target"].rsplit("-", 1)[0]
            d = {"ds": r["event.dataset"], "fs": fs, "t": t, "job": r.get("job.id")}
            for n, f_ in zip(OSS, OSS_F):
                v = r.get(f_)
                d[n] = (v / 1024.0 if n.endswith("_kb") else float(v)) if v is not None else np.nan
            for n, f_ in zip(MDS, MDS_F):
                v = r.get(f_)
                d[n] = float(v) if v is not None else np.nan
            rows.append(d)
    df = pd.DataFrame(rows)
    NS = 1000000000
    df = df[(df.t >= h_from * NS) & (df.t < t_to * NS)]
    df["w"] = (df.t // (window * NS)) * window
    ops = OSS + MDS

    def risks(g, avg):
        out = pd.DataFrame(index=g.index)
        for part, names in (("risk_oss", OSS), ("risk_mds", MDS)):
            s = pd.Series(0.0, index=g.index)
            for n in names:
                a = alpha * avg[n]
                term = (g[n] - a) / a if (pd.notna(a) and a > 0) else pd.Series(np.nan, index=g.index)
                s = s + term.where(term > 0, 0.0).fillna(0.0)
            out[part] = s
        out["read_kb_ops"] = (g.read_ops * 1024 / g.read_kb).where(g.read_kb > 0)
        out["write_kb_ops"] = (g.write_ops * 1024 / g.write_kb).where(g.write_kb > 0)
        return out

    def clean(v):
        return None if pd.isna(v) else float(v)

    result = {"fs_windows": [], "app_windows": [], "fs_stats": {}}
    srv = df[df.ds.isin(["iosonar.oss", "iosonar.mds"])]
    fsw = srv.groupby(["fs", "w"])[ops].sum(min_count=1)
    for fs, g in fsw.groupby(level=0):
        g = g.droplevel(0)
        avg = g.mean(skipna=True)
        rk = risks(g, avg)
        sel = g.index >= t_from
        for w in g.index[sel]:
            result["fs_windows"].append({"fs": fs, "start": int(w), **{k: clean(rk.loc[w, k]) for k in rk.columns}})
        st = {}
        for n in ops:
            x = g.loc[sel, n].dropna()
            if len(x):
                m = x.mean()
                cv = x.std(ddof=1) / m if len(x) >= 2 and m != 0 else None
                st[n] = {"mean": float(m), "cv": clean(cv)}
        result["fs_stats"][fs] = st
    js = df[df.ds == "iosonar.jobstats"].copy()
    if len(js):
        js["app"] = js.job.map(lambda j: apps.get(j, "job " + j))
        aw = js.groupby(["fs", "app", "w"])[ops].sum(min_count=1)
        for fs, g in aw.groupby(level=0):
            avg = g.mean(skipna=True)
            rk = risks(g, avg)
            for (f_, app, w) in g.index:
                if w >= t_from:
                    result["app_windows"].append(
                        {"fs": fs, "app": app, "start": int(w), **{k: clean(rk.loc[(f_, app, w), k]) for k in rk.columns}})
    json.dump(result, sys.stdout)


main()
