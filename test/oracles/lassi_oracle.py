#!/usr/bin/python3
"""Independent LASSi computation with pandas (the oracle), written from
lassi.txt §2.3 and §3.2-3.3 (../shared/seeds/lassi.txt):

  eq. 1  c_v = sigma / mu  (Tables 1-2: per application-hour)
  eq. 2  risk_fs(x) = (x - alpha*avg_fs(x)) / (alpha*avg_fs(x)), non-positive ignored
  eq. 3-4 risk_oss, risk_mds = sums over the OSS and MDS ops
  eq. 5-6 read_kb_ops = read_ops*1024/read_kb, write_kb_ops likewise
  "I/O metrics are computed per application per hour", the statistics
  attributed "to individual application launches" (§2, §3.3): the unit is
  one run. avg_fs(x) is the file system's average of x per run-hour (Tables
  1-2); a run's window is compared with it; an application's (exact
  command's) window risk is the sum of its runs' risks and Fig. 2 (the file
  system's risk) is the sum over the runs, what Figs. 3-4 stack by
  application. Concurrent runs are never summed before the risk.

Reading of the inputs (docs/lassi.md): a run-hour is a window of a
run of a job, from the job's first to its last
job_stats window (a silence longer than 6 h ends a run); job_stats only
report changed counters, so inside the run an op the file system's job_stats
carry and the job did not move is 0. A
file system without job_stats is compared with the mean of its own server
windows.

usage: lassi_oracle.py RECORDS.jsonl APPS.tsv ALPHA WINDOW_S FROM_S TO_S HISTORY_FROM_S [BASELINE.json]
RECORDS: iosonar.oss/mds/jobstats JSON lines; APPS: job_id<TAB>command line;
BASELINE: {"fs": {FS: {op: avg per application-hour}}} (default: the
application-hours of [HISTORY_FROM, TO)).
Prints JSON: fs_windows, app_windows, job_windows (risk_oss, risk_mds,
read_kb_ops, write_kb_ops), fs_stats, baseline.
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
OPS = OSS + MDS


def main():
    path, apps_path = sys.argv[1], sys.argv[2]
    alpha, window = float(sys.argv[3]), int(sys.argv[4])
    t_from, t_to, h_from = (int(x) for x in sys.argv[5:8])
    given = None
    if len(sys.argv) > 8:
        with open(sys.argv[8]) as f:
            given = json.load(f)["fs"]
    apps = {}
    with open(apps_path) as f:
        for line in f:
            if line.strip():
                j, c = line.rstrip("\n").split("\t", 1)
                apps[j] = c
    rows = []
    millis = {}  # @timestamp -> ms since the epoch (the servers of one sample share their instant)
    wanted = ('"iosonar.oss"', '"iosonar.mds"', '"iosonar.jobstats"')
    with open(path) as f:
        for line in f:
            if not any(w in line for w in wanted):  # (trace records: most lines; not parsed)
                continue
            r = json.loads(line)
            if r["event.dataset"] not in ("iosonar.oss", "iosonar.mds", "iosonar.jobstats"):
                continue
            if r.get("lustre.reset"):
                continue
            # A server record covers [@timestamp - lustre.elapsed_ns, @timestamp);
            # it goes to the window holding the middle of that interval, or,
            # without elapsed_ns, the instant just before @timestamp (ns).
            ms = millis.get(r["@timestamp"])
            if ms is None:
                ts = datetime.strptime(r["@timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ")
                ms = millis[r["@timestamp"]] = (ts - datetime(1970, 1, 1)) // timedelta(milliseconds=1)
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
    df = df[(df.t >= h_from * NS) & (df.t < t_to * NS)].copy()
    df["w"] = (df.t // (window * NS)) * window

    def risks(g, avg):
        out = pd.DataFrame(index=g.index)
        for part, names in (("risk_oss", OSS), ("risk_mds", MDS)):
            s = pd.Series(0.0, index=g.index)
            for n in names:
                a = alpha * avg.get(n, np.nan) if avg is not None else np.nan
                term = (g[n] - a) / a if (pd.notna(a) and a > 0) else pd.Series(np.nan, index=g.index)
                s = s + term.where(term > 0, 0.0).fillna(0.0)
            out[part] = s
        out["read_kb_ops"] = (g.read_ops * 1024 / g.read_kb).where(g.read_kb > 0)
        out["write_kb_ops"] = (g.write_ops * 1024 / g.write_kb).where(g.write_kb > 0)
        return out

    def clean(v):
        return None if pd.isna(v) else float(v)

    def stats(frame):
        st = {}
        for n in OPS:
            x = frame[n].dropna()
            if len(x):
                m = x.mean()
                cv = x.std(ddof=1) / m if len(x) >= 2 and m != 0 else None
                st[n] = {"mean": float(m), "cv": clean(cv)}
        return st

    result = {"fs_windows": [], "app_windows": [], "job_windows": [], "fs_stats": {}, "baseline": {}}
    # Application windows: each job's run from its first to its last window, zeros inside.
    js = df[df.ds == "iosonar.jobstats"]
    app_frames = {}
    for fs, g in js.groupby("fs"):
        carried = [n for n in OPS if g[n].notna().any()]
        per_job = []
        for job, gj in g.groupby("job"):
            s = gj.groupby("w")[OPS].sum(min_count=1)
            # The run: consecutive windows, silences of at most 6 h filled (a
            # longer one ends a run whose end the scheduler did not give).
            ws = [int(w) for w in s.index]
            segs, a = [], ws[0]
            for prev, cur in zip(ws, ws[1:]):
                if (cur - prev) // window - 1 > 6 * 3600 // window:
                    segs.append((a, prev))
                    a = cur
            segs.append((a, ws[-1]))
            idx = [w for lo, hi in segs for w in range(lo, hi + 1, window)]
            full = s.reindex(idx)
            full[carried] = full[carried].fillna(0.0)
            full["app"] = apps.get(job, "job " + job)
            full["job"] = job
            per_job.append(full.reset_index().rename(columns={"index": "w"}))
        app_frames[fs] = pd.concat(per_job).set_index(["app", "job", "w"])
    srv = df[df.ds.isin(["iosonar.oss", "iosonar.mds"])]
    fsw = srv.groupby(["fs", "w"])[OPS].sum(min_count=1)
    all_fs = sorted(set(fsw.index.get_level_values(0)) | set(app_frames))
    for fs in all_fs:
        if fs not in app_frames:  # no job_stats: the server windows against their own mean
            g = fsw.loc[fs]
            rk = risks(g, g.mean(skipna=True))
            rkd = rk.to_dict("index")  # (row lookups by .loc, one per value, took most of the time)
            for w in g.index[g.index >= t_from]:
                result["fs_windows"].append({"fs": fs, "start": int(w), **{k: clean(v) for k, v in rkd[w].items()}})
            result["fs_stats"][fs] = stats(g[g.index >= t_from])
            continue
        runs = app_frames[fs][OPS]  # one row per run (job) and window
        avg = runs.mean(skipna=True)  # avg_fs per application-hour: the application is one run (§3.3)
        if given is not None and fs in given:
            avg = pd.Series({n: given[fs].get(n, np.nan) for n in OPS})
        result["baseline"][fs] = {n: clean(avg[n]) for n in OPS}
        rk_run = risks(runs, avg)  # each run's risk per window
        # An application's window: the sum of its runs' risks; its ops quality from the runs' summed ops.
        a = runs.groupby(level=["app", "w"]).sum(min_count=1)
        rk = rk_run[["risk_oss", "risk_mds"]].groupby(level=["app", "w"]).sum()
        q = risks(a, None)
        rk["read_kb_ops"] = q["read_kb_ops"]
        rk["write_kb_ops"] = q["write_kb_ops"]
        rkd, rk_rund = rk.to_dict("index"), rk_run.to_dict("index")
        for (app, w) in a.index:
            if w >= t_from:
                result["app_windows"].append(
                    {"fs": fs, "app": app, "start": int(w), **{k: clean(v) for k, v in rkd[(app, w)].items()}})
        for (app, job, w) in rk_run.index:
            if w >= t_from:
                result["job_windows"].append({"fs": fs, "job": job, "start": int(w),
                                              **{k: clean(v) for k, v in rk_rund[(app, job, w)].items()}})
        # The file system's risk: the sum of its runs' (= its applications') risks in the window.
        in_range = rk[rk.index.get_level_values(1) >= t_from]
        by_w = in_range.groupby(level=1)[["risk_oss", "risk_mds"]].sum()
        server = fsw.loc[fs] if fs in fsw.index.get_level_values(0) else None
        ws = set(by_w.index)
        if server is not None:
            ws |= set(w for w in server.index if w >= t_from)
            # The ops quality is per window (row by row): computed once for all of them.
            server_q = risks(server, None).to_dict("index")
        for w in sorted(ws):
            e = {"fs": fs, "start": int(w), "risk_oss": 0.0, "risk_mds": 0.0, "read_kb_ops": None, "write_kb_ops": None}
            if w in by_w.index:
                e["risk_oss"] = float(by_w.loc[w, "risk_oss"])
                e["risk_mds"] = float(by_w.loc[w, "risk_mds"])
            if server is not None and w in server_q:
                e["read_kb_ops"] = clean(server_q[w]["read_kb_ops"])
                e["write_kb_ops"] = clean(server_q[w]["write_kb_ops"])
            result["fs_windows"].append(e)
        result["fs_stats"][fs] = stats(runs[runs.index.get_level_values(2) >= t_from])
    json.dump(result, sys.stdout)


main()
