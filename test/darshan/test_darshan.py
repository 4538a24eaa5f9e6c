#!/usr/bin/env python3
"""The Darshan import against pydarshan (PyPI `darshan`, the Darshan project's
own reader), on the example logs the pinned pydarshan wheel ships (real runs:
VPIC-IO and IOR at 2,048 ranks on Lustre with OST lists, DXT traces, HDF5/IOR,
MACSio), the same logs rewritten as format 3.41 by libdarshan-util itself, and
the same logs in the other byte order.

  test_darshan.py --build DIR --source DIR CASE

CASE: reader   every record, counter, OST list and DXT segment equals pydarshan's
      import   the stored records' ops and bytes per module equal pydarshan's counters;
               a second import stores nothing; job-summary's bytes and I/O mode match
               the counters
      refuse   truncated, garbled, unknown-version and out-of-file logs: exit 1 naming the
               log and the byte offset; the other logs of the run are still imported
      badost   `bad-ost` on the LUSTRE+POSIX data of the IOR samples equals TOKIO's
               method recomputed here with scipy from pydarshan's records

pydarshan lives in the venv scripts/setup.sh --test makes ($IOSONAR_PYDARSHAN_VENV,
default ~/.cache/iosonar/pydarshan-3.5.0); without it the test prints IOSONAR-SKIP.
"""
import argparse
import glob
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

PYDARSHAN_VERSION = "3.5.0"
HERE = os.path.dirname(os.path.abspath(__file__))
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)
    return cond


def venv_python():
    venv = os.environ.get("IOSONAR_PYDARSHAN_VENV") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "iosonar",
        "pydarshan-" + PYDARSHAN_VERSION)
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        print("IOSONAR-SKIP: pydarshan venv %s missing (bash scripts/setup.sh --test makes it)" % venv)
        sys.exit(0)
    return py


def run(cmd, ok=True, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if ok and p.returncode != 0:
        raise SystemExit("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout[-2000:],
                                                             p.stderr[-4000:]))
    return p


_DUMPS = {}


def oracle(py, *args):
    if args[0] == "dump" and args[1] in _DUMPS:  # an original log is the oracle of its variants too
        return _DUMPS[args[1]]
    out = run([py, os.path.join(HERE, "pydarshan_oracle.py")] + list(args)).stdout
    if args[0] == "dump":
        _DUMPS[args[1]] = out
    return out


def sample_logs(py):
    root = run([py, "-c", "import darshan, os; print(os.path.dirname(darshan.__file__))"]).stdout.strip()
    seen, logs = set(), []
    for f in sorted(glob.glob(os.path.join(root, "**", "*.darshan"), recursive=True)):
        h = hashlib.sha256(open(f, "rb").read()).hexdigest()
        if h not in seen:
            seen.add(h)
            logs.append(f)
    if not logs:
        raise SystemExit("pydarshan ships no example logs?")
    return logs


def variants(py, tmp, logs):
    """(name, log, original): each sample, its 3.41 rewrite, its byte-swapped form."""
    out = []
    for i, f in enumerate(logs):
        base = os.path.basename(f)
        out.append((base, f, f))
        conv = os.path.join(tmp, "v341-%d-%s" % (i, base))
        oracle(py, "convert", f, conv)
        out.append(("3.41 rewrite of " + base, conv, f))
        sw = os.path.join(tmp, "swapped-%d-%s" % (i, base))
        oracle(py, "swap", f, sw)
        out.append(("byte-swapped " + base, sw, f))
    return out


def feq(a, b):
    return a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def case_reader(a, py, tmp):
    logs = sample_logs(py)
    versions = set()
    for name, log, orig in variants(py, tmp, logs):
        want = json.loads(oracle(py, "dump", orig))
        got = json.loads(run([a.dump, log]).stdout)
        versions.add(got["version"])
        if "3.41 rewrite" in name:
            check(got["version"] == "3.41", name + ": version " + got["version"])
        if "swapped" in name:
            check(got["swapped"], name + ": not seen as the other byte order")
        for k, v in want["job"].items():
            check(got["job"][k] == v, "%s: job %s %r != %r" % (name, k, got["job"].get(k), v))
        # libdarshan-util returns no executable when the line fills its field without a newline
        # (Darshan cut it at run time and marked it "<TRUNCATED>"); we keep the line.
        check(got["job"]["exe"] == want["exe"] or (want["exe"] == "" and got["job"]["exe"].endswith("<TRUNCATED>")),
              name + ": exe %r != %r" % (got["job"]["exe"][-60:], want["exe"][-60:]))
        old_posix = any(m["name"] == "POSIX" and m["version"] < 4 for m in want["modules"])
        gm = {m["name"]: m for m in got["modules"]}
        for m in want["modules"]:
            g = gm.get(m["name"])
            if not check(g is not None, "%s: module %s missing" % (name, m["name"])):
                continue
            check(g["partial"] == m["partial"], "%s: %s partial flag" % (name, m["name"]))
            if g["read"]:
                check(g["records"] == m["records"], "%s: %s records %d != %d" % (name, m["name"], g["records"],
                                                                                 m["records"]))
            else:
                check(m["name"] not in ("POSIX", "MPI-IO", "STDIO", "LUSTRE", "DXT_POSIX", "DXT_MPIIO"),
                      "%s: %s not read: %s" % (name, m["name"], g["note"]))
        key = lambda r: (r["module"], r["id"], r["rank"])
        gr = {}
        for r in got["records"]:
            gr.setdefault(key(r), []).append(r)
        n = 0
        for r in want["records"]:
            cands = gr.get(key(r), [])
            if not check(cands, "%s: %s record %d rank %d missing" % (name, r["module"], r["id"], r["rank"])):
                continue
            g = cands.pop(0)
            n += 1
            if r["module"] in ("POSIX", "MPI-IO", "STDIO"):
                check(g["counters"] == r["counters"], "%s: %s %d counters differ" % (name, r["module"], r["id"]))
                # libdarshan-util's POSIX 3->4 up-conversion moves the record short by two words:
                # F_VARIANCE_RANK_TIME/BYTES (15, 16) come back 0; we read them.
                skip = {15, 16} if r["module"] == "POSIX" and old_posix else set()
                check(len(g["fcounters"]) == len(r["fcounters"]) and
                      all(feq(x, y) for i, (x, y) in enumerate(zip(g["fcounters"], r["fcounters"])) if i not in skip),
                      "%s: %s %d fcounters differ" % (name, r["module"], r["id"]))
            elif r["module"] == "LUSTRE":
                check(g["components"] == r["components"] and g["osts"] == r["osts"],
                      "%s: LUSTRE %d layout differs" % (name, r["id"]))
            else:
                check(g["hostname"] == r["hostname"], "%s: DXT hostname" % name)
                check(len(g["segments"]) == len(r["segments"]) and all(
                    x[:3] == y[:3] and feq(x[3], y[3]) and feq(x[4], y[4])
                    for x, y in zip(g["segments"], r["segments"])), "%s: DXT %d segments differ" % (name, r["id"]))
        check(sum(len(v) for v in gr.values()) == 0, name + ": records pydarshan does not have")
        print("reader: %-70s %6d records equal" % (name[:70], n))
    check({"3.10", "3.21", "3.41"} <= versions, "log versions seen: %s" % sorted(versions))


def totals(want):
    """ops and bytes per module from pydarshan's counters (indices of the newest layouts)."""
    t = {}
    for r in want["records"]:
        c = r.get("counters")
        if r["module"] == "POSIX":
            v = (c[3], c[4], c[14], c[15])  # READS WRITES BYTES_READ BYTES_WRITTEN
        elif r["module"] == "MPI-IO":
            v = (c[2] + c[4] + c[6] + c[8], c[3] + c[5] + c[7] + c[9], c[14], c[15])
        elif r["module"] == "STDIO":
            v = (c[2], c[3], c[7], c[6])
        else:
            continue
        s = t.setdefault(r["module"], [0, 0, 0, 0])
        for i in range(4):
            s[i] += max(v[i], 0)
    return t


def stored_totals(a, store, job):
    out = run([a.iosonar, "store-export", "--store", store, "--dataset", "iosonar.trace", "--job", job]).stdout
    t, n = {}, 0
    layer_mod = {"posix": "POSIX", "mpiio": "MPI-IO", "stdio": "STDIO"}
    for line in out.splitlines():
        r = json.loads(line)
        n += 1
        if r["io.op"] not in ("read", "write"):
            continue
        s = t.setdefault(layer_mod[r["io.layer"]], [0, 0, 0, 0])
        w = r["io.op"] == "write"
        s[1 if w else 0] += r["io.count"]
        s[3 if w else 2] += r.get("io.bytes", 0)
    return t, n


def keep(items, share=0.9, tie=0.5):
    """The summary's rule: the smallest set by size carrying >= share, plus those at least
    tie x the smallest kept."""
    order = sorted(items, key=lambda kv: -kv[1])
    total = sum(v for _, v in order)
    kept, acc = [], 0
    for k, v in order:
        if kept and acc >= share * total and v < tie * kept[-1][1]:
            break
        kept.append((k, v))
        acc += v
    return kept


def expected_mode(want, direction):
    """The I/O mode the POSIX and STDIO counters say, by the job summary's rule (files,
    then processes, by bytes). A rank -1 record (a file every rank opened) moved
    *_FASTEST_RANK_BYTES on the fastest rank, *_SLOWEST_RANK_BYTES on the slowest and
    the rest on the others alike (the counters say no more; docs/darshan.md)."""
    nprocs = want["job"]["nprocs"]
    col = {("POSIX", "read"): 14, ("POSIX", "write"): 15, ("STDIO", "read"): 7, ("STDIO", "write"): 6}
    rank_cols = {"POSIX": (65, 66, 67, 68), "STDIO": (10, 11, 12, 13)}
    per_file = {}  # id -> {rank: bytes}
    for r in want["records"]:
        if r["module"] not in ("POSIX", "STDIO"):
            continue
        c = r["counters"]
        b = c[col[(r["module"], direction)]]
        if b <= 0:
            continue
        f = per_file.setdefault(r["id"], {})
        if r["rank"] >= 0 or nprocs <= 1:
            f[max(r["rank"], 0)] = f.get(max(r["rank"], 0), 0) + b
            continue
        fr, fb, sr, sb = (c[i] for i in rank_cols[r["module"]])
        tot = c[col[(r["module"], "read")]] + c[col[(r["module"], "write")]]
        pinned = {}
        for rk, rb in ((fr, fb), (sr, sb)):
            if 0 <= rk < nprocs and rk not in pinned and rb > 0:
                pinned[rk] = rb
        rest = max(tot - sum(pinned.values()), 0) / max(nprocs - len(pinned), 1)
        for rk in range(nprocs):
            share = (pinned.get(rk, rest)) / tot if tot else 1.0 / nprocs
            f[rk] = f.get(rk, 0) + b * share
    files = {k: sum(v.values()) for k, v in per_file.items()}
    if not files or sum(files.values()) == 0:
        return "none"
    kept_files = [k for k, _ in keep(files.items())]
    procs = {}
    for k in kept_files:
        for rk, b in per_file[k].items():
            procs[rk] = procs.get(rk, 0) + b
    kept_procs = keep([kv for kv in procs.items() if kv[1] > 0])
    if len(kept_procs) == 1:
        return "1-*"
    if len(kept_files) == 1:
        return "N-1"
    private = all(max(per_file[k].values()) >= 0.9 * files[k] for k in kept_files)
    return "N-N" if private and len(kept_files) >= len(kept_procs) else "N-M"


def case_import(a, py, tmp):
    logs = sample_logs(py)
    modes_checked = 0
    # (the byte-swapped forms read as the originals: case reader)
    for name, log, orig in [v for v in variants(py, tmp, logs) if not v[0].startswith("byte-swapped")]:
        want = json.loads(oracle(py, "dump", orig))
        store = tempfile.mkdtemp(dir=tmp)
        p = run([a.iosonar, "darshan-import", log, "--store", store, "--format", "json"])
        rep = json.loads(p.stdout)[0]
        job = rep["job_id"]
        check(rep["stored"] == rep["records"] and rep["already_stored"] == 0,
              "%s: first import stored %d of %d" % (name, rep["stored"], rep["records"]))
        got, n = stored_totals(a, store, job)
        exp = totals(want)
        for mod in set(exp) | set(got):
            e = exp.get(mod, [0, 0, 0, 0])
            g = got.get(mod, [0, 0, 0, 0])
            check(e == g, "%s: %s stored reads/writes/bytes read/written %s != pydarshan %s" % (name, mod, g, e))
            # the summary table's own totals (from the reader) equal them too
            rm = {m["name"]: m for m in rep["modules"]}.get(mod)
            if rm and "reads" in rm:
                check([rm["reads"], rm["writes"], rm["bytes_read"], rm["bytes_written"]] == e,
                      "%s: %s summary totals" % (name, mod))
        # again: nothing new
        p2 = run([a.iosonar, "darshan-import", log, "--store", store, "--format", "json"])
        rep2 = json.loads(p2.stdout)[0]
        check(rep2["stored"] == 0 and rep2["already_stored"] == rep["records"],
              "%s: second import stored %d, %d already stored of %d" % (name, rep2["stored"],
                                                                        rep2["already_stored"], rep["records"]))
        _, n2 = stored_totals(a, store, job)
        check(n2 == n, "%s: records after the second import %d != %d" % (name, n2, n))
        # the job summary reads them: POSIX bytes and the I/O mode
        js = json.loads(run([a.iosonar, "job-summary", job, "--store", store, "--format", "json"]).stdout)
        e = [x + y for x, y in zip(exp.get("POSIX", [0, 0, 0, 0]), exp.get("STDIO", [0, 0, 0, 0]))]
        check(js["read"]["bytes"] == e[2] and js["write"]["bytes"] == e[3] and js["read"]["ops"] == e[0] and
              js["write"]["ops"] == e[1], "%s: job-summary ops/bytes %d %d %d %d != POSIX+STDIO %s" % (
                  name, js["read"]["ops"], js["write"]["ops"], js["read"]["bytes"], js["write"]["bytes"], e))
        for d in ("read", "write"):
            em = expected_mode(want, d)
            gm = js["io_mode"][d]
            ok = gm.startswith("1-") if em == "1-*" else gm == em
            check(ok, "%s: %s mode %s, counters say %s" % (name, d, gm, em))
            modes_checked += 1
        print("import: %-60s %7d records, modes %s/%s" % (name[:60], rep["records"], js["io_mode"]["read"],
                                                         js["io_mode"]["write"]))
    check(modes_checked > 0, "no mode checked")


def case_refuse(a, py, tmp):
    logs = sample_logs(py)
    src = open(logs[0], "rb").read()
    good = os.path.join(tmp, "good.darshan")
    shutil.copy(logs[0], good)
    bad = {}

    def put(tag, data):
        p = os.path.join(tmp, tag + ".darshan")
        open(p, "wb").write(data)
        bad[tag] = p

    put("empty", b"")
    put("header-cut", src[:200])
    put("region-cut", src[:len(src) // 2])
    put("last-byte-cut", src[:-1])
    put("bad-magic", src[:8] + b"\x01" * 8 + src[16:])
    put("version-3.99", b"3.99\0\0\0\0" + src[8:])
    put("version-2.06", b"2.06\0\0\0\0" + src[8:])
    garbled = bytearray(src)
    hdr = 1328 if src[:4] == b"3.41" else 360
    for i in range(hdr + 8, hdr + 40):  # inside the job record's zlib stream (always read)
        garbled[i] ^= 0x5A
    put("garbled-zlib", bytes(garbled))
    far = bytearray(src)
    off = 24 if src[:4] != b"3.41" else 32
    far[off:off + 8] = (len(src) + 4096).to_bytes(8, "little")
    put("region-outside", bytes(far))
    for tag, path in sorted(bad.items()):
        store = tempfile.mkdtemp(dir=tmp)
        p = run([a.iosonar, "darshan-import", path, good, "--store", store, "--format", "json"], ok=False)
        check(p.returncode == 1, "%s: exit %d, want 1" % (tag, p.returncode))
        msg = p.stderr
        check(path in msg and "offset " in msg, "%s: message names neither log nor offset: %r" % (tag, msg[:300]))
        rows = json.loads(p.stdout)
        check(rows[0].get("error") and "offset " in rows[0]["error"], "%s: summary row %r" % (tag, rows[0]))
        check(rows[1].get("stored", 0) > 0, "%s: the good log after it was not imported" % tag)
        print("refuse: %-16s %s" % (tag, msg.strip().splitlines()[0][:150]))


def case_badost(a, py, tmp):
    logs = [f for f in sample_logs(py) if "badost" in f or "goodost" in f]
    check(len(logs) >= 2, "IOR samples with OST lists missing")
    for log in logs:
        csv = os.path.join(tmp, os.path.basename(log) + ".csv")
        store = tempfile.mkdtemp(dir=tmp)
        run([a.iosonar, "darshan-import", log, "--store", store, "--bad-ost-csv", csv])
        got = json.loads(run([a.iosonar, "bad-ost", csv, "--format", "json", "-p", "1"]).stdout)
        # TOKIO's method (pytokio's darshan_bad_ost) on pydarshan's records, with scipy
        want = json.loads(oracle(py, "dump", log))
        perf, osts = {}, {}
        io = {}
        for r in want["records"]:
            if r["module"] == "POSIX":
                s = io.setdefault(r["id"], [0, 0.0])
                s[0] += max(r["counters"][14], 0) + max(r["counters"][15], 0)
                s[1] += max(r["fcounters"][8], 0) + max(r["fcounters"][9], 0)
        for r in want["records"]:
            if r["module"] == "LUSTRE" and r["id"] in io and io[r["id"]][1] > 0 and r["osts"]:
                perf[r["id"]] = io[r["id"]][0] / io[r["id"]][1]
                osts[r["id"]] = r["osts"]
        files = sorted(perf)
        all_osts = sorted({o for f in files for o in osts[f]})
        cases, names = [], []
        for o in all_osts:
            x = [perf[f] for f in files]
            y = [1.0 / len(osts[f]) if o in osts[f] else 0.0 for f in files]
            if len(set(y)) < 2:
                continue
            cases.append({"x": x, "y": y})
            names.append(o)
        res = json.loads(run(["/usr/bin/python3", os.path.join(a.source, "test/oracles/badost_pearson.py")],
                             input=json.dumps(cases)).stdout)
        want_c = {o: r for o, r in zip(names, res)}
        got_c = {c["ost"]: c for c in got["results"]}
        check(got["files"] == len(files), "%s: files %d != %d" % (log, got["files"], len(files)))
        for o, r in want_c.items():
            g = got_c.get(o)
            if check(g is not None, "%s: OST %d missing" % (log, o)):
                check(abs(g["coefficient"] - r["r"]) < 1e-9 and abs(g["p-value"] - r["p"]) < 1e-6,
                      "%s: OST %d r=%g p=%g, scipy r=%g p=%g" % (log, o, g["coefficient"], g["p-value"], r["r"],
                                                                  r["p"]))
        worst = min(want_c.items(), key=lambda kv: kv[1]["r"])
        print("badost: %s: %d files, %d OSTs; most negative OST %d r=%.3f p=%.2g" % (
            os.path.basename(log), len(files), len(want_c), worst[0], worst[1]["r"], worst[1]["p"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iosonar", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("case", choices=["reader", "import", "refuse", "badost"])
    a = ap.parse_args()
    py = venv_python()
    with tempfile.TemporaryDirectory() as tmp:
        globals()["case_" + a.case](a, py, tmp)
    if FAILS:
        print("%d failures" % len(FAILS))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
