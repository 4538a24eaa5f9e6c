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
      drishti  every issue drishti (PyPI `drishti-io`, pinned, pip-installed into the same
               venv) raises at its high/warn level in the agreed families is raised by
               `job-summary --advice` on the imported job too, or is in the exception table
               of docs/darshan.md (which must hold no stale row)
      mysql    `--mysql` against a real MariaDB (started here as test/testutil/mariadb_server.cc
               does): the jobs rows equal pydarshan's job records, a second import changes
               none, and `anomaly`'s history groups the imports of one application's log

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
DRISHTI_VERSION = "0.8"
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
_ORACLE = {}


def _oracle_call(py, args):
    """One pydarshan_oracle.py per test, asked over a pipe (pydarshan and numpy take about
    a CPU-second to import: once, not once per log and command)."""
    p = _ORACLE.get(py)
    if p is None or p.poll() is not None:
        p = _ORACLE[py] = subprocess.Popen([py, os.path.join(HERE, "pydarshan_oracle.py"), "serve"],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    p.stdin.write(json.dumps(args) + "\n")
    p.stdin.flush()
    line = p.stdout.readline()
    if not line:
        raise SystemExit("pydarshan oracle ended (exit %s) on: %s" % (p.wait(), " ".join(args)))
    ans = json.loads(line)
    if "error" in ans:
        raise SystemExit("pydarshan oracle failed on %s:\n%s" % (" ".join(args), ans["error"]))
    return ans["out"]


def oracle(py, *args):
    if args[0] == "dump" and args[1] in _DUMPS:  # an original log is the oracle of its variants too
        return _DUMPS[args[1]]
    out = _oracle_call(py, list(args))
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
    extra = {"not_aligned": 0, "mem_not_aligned": 0, "stragglers": []}
    for line in out.splitlines():
        r = json.loads(line)
        n += 1
        extra["not_aligned"] += r.get("io.ops_not_aligned", 0)
        extra["mem_not_aligned"] += r.get("io.ops_mem_not_aligned", 0)
        if "file.fastest_rank" in r and r["io.layer"] == "posix":
            extra["stragglers"].append((r["file.fastest_rank"], r["file.fastest_rank_bytes"], r["file.slowest_rank"],
                                        r["file.slowest_rank_bytes"]))
        if r["io.op"] not in ("read", "write"):
            continue
        s = t.setdefault(layer_mod[r["io.layer"]], [0, 0, 0, 0])
        w = r["io.op"] == "write"
        s[1 if w else 0] += r["io.count"]
        s[3 if w else 2] += r.get("io.bytes", 0)
    stored_totals.extra = extra
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
        # Darshan's alignment counters and shared files' stragglers, carried as fields
        posix = [r for r in want["records"] if r["module"] == "POSIX"]
        ex = stored_totals.extra
        for col, key in ((25, "not_aligned"), (23, "mem_not_aligned")):
            e = sum(max(r["counters"][col], 0) for r in posix)
            check(ex[key] == e, "%s: stored io.ops_%s %d != pydarshan's %d" % (name, key, ex[key], e))
        e = sorted((r["counters"][65], max(r["counters"][66], 0), r["counters"][67], max(r["counters"][68], 0))
                   for r in posix if r["rank"] < 0 and want["job"]["nprocs"] > 1 and r["counters"][65] >= 0 and
                   r["counters"][67] >= 0)
        check(sorted(ex["stragglers"]) == e, "%s: stored stragglers %s != pydarshan's %s" % (
            name, sorted(ex["stragglers"])[:4], e[:4]))
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


# drishti's issue codes (drishti/includes/config.py) by family, and the advice
# kinds of iosonar's that answer them (analysis-jobs/report: AddDrishtiRules).
DRISHTI_FAMILIES = {
    "small requests": ({"P05", "P06"}, {"small requests"}),
    "misaligned requests": ({"P07", "P08"}, {"misaligned requests"}),
    "random access": ({"P11", "P13"}, {"random access"}),
    "load imbalance and stragglers": ({"P18", "P19", "P21", "P22"}, {"stragglers", "load imbalance"}),
    "small requests on shared files": ({"P15", "P16"}, {"small requests on shared files"}),
    "no collective MPI-IO": ({"M02", "M03"}, {"no collective MPI-IO"}),
}
EXCEPTIONS_MARK = "<!-- drishti exceptions: test/darshan/test_darshan.py reads this table -->"


def drishti_exceptions(source):
    """(log file name, code) -> reason, from the table after EXCEPTIONS_MARK in docs/darshan.md."""
    text = open(os.path.join(source, "docs", "darshan.md")).read()
    if EXCEPTIONS_MARK not in text:
        raise SystemExit("docs/darshan.md has no drishti exception table (%s)" % EXCEPTIONS_MARK)
    out = {}
    for line in text.split(EXCEPTIONS_MARK, 1)[1].lstrip("\n").splitlines():
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] in ("log", "") or set(cells[0]) <= set("-: "):
            continue
        log, code, why = cells[0].strip("`"), cells[1].strip("`"), cells[2]
        check(why != "", "docs/darshan.md: the exception %s %s gives no reason" % (log, code))
        out[(log, code)] = why
    return out


def ensure_drishti(py):
    have = run([py, "-c", "import importlib.metadata as m; print(m.version('drishti-io'))"], ok=False)
    if have.returncode == 0 and have.stdout.strip() == DRISHTI_VERSION:
        return
    pip = os.path.join(os.path.dirname(py), "pip")
    p = run([pip, "install", "-q", "drishti-io==" + DRISHTI_VERSION, "darshan==" + PYDARSHAN_VERSION], ok=False)
    if p.returncode != 0:
        print("IOSONAR-SKIP: pip could not install drishti-io %s into the venv:\n%s" % (DRISHTI_VERSION,
                                                                                      p.stderr[-2000:]))
        sys.exit(0)


def case_drishti(a, py, tmp):
    ensure_drishti(py)
    exceptions = drishti_exceptions(a.source)
    used, compared = set(), 0
    for i, log in enumerate(sample_logs(py)):
        base = os.path.basename(log)
        out = os.path.join(tmp, "drishti-%d.json" % i)
        run([py, os.path.join(HERE, "drishti_codes.py"), out, log], cwd=tmp)
        d = json.load(open(out))
        if not check(d["issues"], "%s: drishti raised nothing (%s)" % (base, d["error"])):
            continue
        codes = {x["code"] for x in d["issues"] if x["level"] in ("high", "warn")}
        store = tempfile.mkdtemp(dir=tmp)
        job = json.loads(run([a.iosonar, "darshan-import", log, "--store", store, "--format", "json"]).stdout)[0]
        p = run([a.iosonar, "job-summary", job["job_id"], "--store", store, "--advice", "--format", "json"],
                ok=False)
        if p.returncode != 0:
            check("has no trace records" in p.stderr, "%s: job-summary --advice failed: %s" % (base, p.stderr))
            advice = []
        else:
            advice = json.loads(p.stdout)
        kinds = {x["kind"] for x in advice}
        for x in advice:
            check(x["evidence"] and x["change"], "%s: advice %s without evidence or change" % (base, x["kind"]))
        answered = set()
        for fam, (dcodes, ikinds) in DRISHTI_FAMILIES.items():
            for c in sorted(codes & dcodes):
                compared += 1
                if kinds & ikinds:
                    answered |= kinds & ikinds
                    continue
                if (base, c) in exceptions:
                    used.add((base, c))
                    print("drishti: %s: %s (%s) not raised by iosonar: documented exception" % (base, c, fam))
                    continue
                check(False, "%s: drishti raises %s (%s), iosonar's advice does not (it says: %s)" % (
                    base, c, fam, ", ".join(sorted(kinds)) or "nothing"))
        print("drishti: %s: drishti %s; iosonar %s%s" % (
            base, " ".join(sorted(codes)) or "-", "; ".join(sorted(kinds)) or "-",
            "" if not d["error"] else " (drishti failed after its checks: %s)" % d["error"]))
    for e in sorted(set(exceptions) - used):
        check(False, "docs/darshan.md: the drishti exception %s %s is stale (drishti does not raise it, or "
                     "iosonar now does)" % e)
    check(compared > 0, "drishti raised no issue of the compared families on any sample")
    print("drishti: %d issues of the compared families on %d logs, %d documented exceptions" % (
        compared, len(sample_logs(py)), len(used)))


def open_exe(py, log):
    return json.loads(oracle(py, "dump", log))["exe"]


class MariaDb:
    """A real MariaDB for the test, started as test/testutil/mariadb_server.cc starts it: a
    fresh datadir (mariadb-install-db), mariadbd on a private socket and loopback port,
    polled until it answers, stopped by pid."""

    def __init__(self, tmp):
        import socket
        for prog in ("mariadb-install-db", "mariadb"):
            if not shutil.which(prog):
                raise SystemExit("%s is not installed (scripts/setup.sh --test installs it)" % prog)
        self.mariadbd = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
        self.dir = tempfile.mkdtemp(prefix="mariadb-", dir=tmp)
        self.sock = os.path.join(self.dir, "mysql.sock")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        os.makedirs(os.path.join(self.dir, "tmp"))
        env = dict(os.environ, TMPDIR=os.path.join(self.dir, "tmp"))
        run(["mariadb-install-db", "--no-defaults", "--datadir=" + os.path.join(self.dir, "data"),
             "--tmpdir=" + os.path.join(self.dir, "tmp"), "--auth-root-authentication-method=normal",
             "--skip-test-db", "--user=root", "--skip-name-resolve"], env=env)
        self.log = os.path.join(self.dir, "error.log")
        self.proc = subprocess.Popen(
            [self.mariadbd, "--no-defaults", "--datadir=" + os.path.join(self.dir, "data"),
             "--tmpdir=" + os.path.join(self.dir, "tmp"), "--socket=" + self.sock, "--port=%d" % self.port,
             "--bind-address=127.0.0.1", "--pid-file=" + os.path.join(self.dir, "mariadbd.pid"), "--user=root",
             "--log-error=" + self.log, "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M",
             "--innodb-flush-log-at-trx-commit=2", "--skip-name-resolve", "--character-set-server=utf8mb4",
             "--collation-server=utf8mb4_bin"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import time
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise SystemExit("mariadbd exited: " + open(self.log).read()[-3000:])
            if run(["mariadb", "--no-defaults", "-uroot", "--socket=" + self.sock, "-e", "SELECT 1"],
                   ok=False).returncode == 0:
                break
            if time.monotonic() > deadline:
                self.stop()
                raise SystemExit("mariadbd did not answer on %s: %s" % (self.sock, open(self.log).read()[-3000:]))
            time.sleep(0.1)  # polling interval of the readiness check above, not a wait for readiness

    def url(self, db="iosonar"):
        return "mysql://root@localhost/%s?socket=%s&create=1" % (db, self.sock)

    def query(self, sql, db="iosonar"):
        out = run(["mariadb", "--no-defaults", "-uroot", "--socket=" + self.sock, "-D", db, "-B", "-N", "-e",
                   sql]).stdout
        return [line.split("\t") for line in out.splitlines()]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(60)


def case_mysql(a, py, tmp):
    logs = {os.path.basename(f): f for f in sample_logs(py)}
    want_name = [n for n in logs if n.startswith("pq_app_write_id71296")]
    other_names = [n for n in logs if n.startswith("pq_app_write_id71303") or n.startswith("pq_app_read_id71317")]
    if not check(want_name and len(other_names) == 2, "the pq_app samples are missing: %s" % sorted(logs)):
        return
    app, others = logs[want_name[0]], [logs[n] for n in other_names]
    db = MariaDb(tmp)
    try:
        url = db.url()
        run([a.iosonar, "db-migrate", "--mysql", url])
        store = os.path.join(tmp, "store")
        os.makedirs(store)
        # one application's log imported under four job ids (its own and three more), and two
        # other applications' logs (./app_write with another argument, ./app_read)
        imports = [(app, None), (app, "1001"), (app, "1002"), (app, "1003")] + [(o, None) for o in others]
        ids = {}
        for log, jid in imports:
            cmd = [a.iosonar, "darshan-import", log, "--store", store, "--mysql", url, "--cluster", "pq",
                   "--format", "json"] + (["--job-id", jid] if jid else [])
            rep = json.loads(run(cmd).stdout)[0]
            ids.setdefault(log, []).append(rep["job_id"])
        rows = {r[0]: r for r in db.query(
            "SELECT job_id, uid, task_count, UNIX_TIMESTAMP(start_time), UNIX_TIMESTAMP(end_time), command, source, "
            "step FROM jobs WHERE cluster = 'pq' ORDER BY job_id")}
        check(len(rows) == 6, "jobs rows: %d, want 6: %s" % (len(rows), sorted(rows)))
        for log, jids in ids.items():
            want = json.loads(oracle(py, "dump", log))
            j = want["job"]
            for jid in jids:
                r = rows.get(jid)
                if not check(r is not None, "job %s (%s) has no jobs row" % (jid, os.path.basename(log))):
                    continue
                check(int(r[1]) == j["uid"] and int(r[2]) == j["nprocs"], "job %s: uid/tasks %s/%s != %d/%d" % (
                    jid, r[1], r[2], j["uid"], j["nprocs"]))
                check(abs(float(r[3]) - (j["start_time_sec"] + j["start_time_nsec"] / 1e9)) < 1e-5 and
                      abs(float(r[4]) - (j["end_time_sec"] + j["end_time_nsec"] / 1e9)) < 1e-5,
                      "job %s: start/end %s %s != the log's %d %d" % (jid, r[3], r[4], j["start_time_sec"],
                                                                      j["end_time_sec"]))
                check(r[5] == want["exe"] and r[6] == "darshan" and r[7] == "",
                      "job %s: command %r source %r step %r" % (jid, r[5], r[6], r[7]))
        # importing again changes no row
        before = db.query("SELECT * FROM jobs ORDER BY cluster, job_id, step")
        for log, jid in imports[:2]:
            run([a.iosonar, "darshan-import", log, "--store", store, "--mysql", url, "--cluster", "pq"] +
                (["--job-id", jid] if jid else []))
        check(db.query("SELECT * FROM jobs ORDER BY cluster, job_id, step") == before,
              "a second import changed the jobs rows")
        # anomaly's history: the runs of the same command that ended by the job's start (these runs
        # start and end in the same second, so each is the others' history); no other application
        group = set(ids[app])
        keys = set()
        for jid in sorted(group):
            res = json.loads(run([a.iosonar, "anomaly", jid, "--store", store, "--mysql", url, "--cluster", "pq",
                                  "--format", "json"]).stdout)
            check(set(res["history"]) == group - {jid} and len(res["history"]) == len(group) - 1,
                  "anomaly %s: history %s, want %s" % (jid, res["history"], sorted(group - {jid})))
            # grouped on the application key the job database computed from the executable line
            check(res["history_match"] == "app_key" and res["command"] == open_exe(py, app),
                  "anomaly %s: matched on %s, command %r" % (jid, res["history_match"], res["command"]))
            keys.add(res["app_key"])
        check(len(keys) == 1 and "" not in keys, "the imports of one log have application keys %s" % keys)
        for o in others:
            jid = ids[o][0]
            res = json.loads(run([a.iosonar, "anomaly", jid, "--store", store, "--mysql", url, "--cluster", "pq",
                                  "--format", "json"]).stdout)
            check(res["history"] == [] and res["app_key"] not in keys,
                  "anomaly %s (%s): history %s (key %r), want none" % (jid, os.path.basename(o), res["history"],
                                                                       res["app_key"]))
        print("mysql: %d jobs rows; %s's imports %s form one history group" % (
            len(rows), os.path.basename(app)[:20], sorted(group)))
    finally:
        db.stop()


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
    ap.add_argument("case", choices=["reader", "import", "refuse", "badost", "drishti", "mysql"])
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
