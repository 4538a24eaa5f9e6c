#!/usr/bin/env python3
"""The tracer on real programs (issue 38's acceptance): Debian's python3, tar,
gzip, xz, git, cp, dd, sqlite3, gcc with make, java (when installed), each in
a fresh copy of its inputs, run three ways:

  - under strace (untraced): the reference. Its output and exit status are what
    the traced runs must give, and the bytes its read/write family system calls
    moved on the work directory's files (strace -y names each descriptor's
    file) are the kernel's ground truth;
  - under the tracer in each output mode: a file, tcp:// to a receiver (a
    socket here), and agent mode with a real node agent (iosonar-exporter
    agent) shipping to a file.

Each traced run must give the same exit status, stdout and stderr (the tracer
never writes to the program's stderr), end within its timeout (no hang), and
record, on the work directory's files, the bytes the kernel moved, read and
written apart: exactly, except where README.md says what is not seen (below:
per program, the reason). No record may be dropped (tracer.dropped 0).

usage: tracer_programs.py BUILD_DIR [MODES] [PROGRAMS]  (comma-separated; default all)
"""
import collections
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

B = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MODES = (sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else "file,tcp,agent").split(",")
ONLY = set(sys.argv[3].split(",")) if len(sys.argv) > 3 and sys.argv[3] else None
LIB = os.environ.get("IOSONAR_TRACE_LIB") or B + "/libiosonar-trace.so"
AGENT = B + "/iosonar-exporter"
TIMEOUT = 120  # a traced run that takes longer has hung

# System calls whose bytes the kernel's count takes (strace -e). copy_file_range,
# sendfile and splice are counted only if the tracer wraps them (else they are
# among what README says is not seen).
DATA_CALLS = ["read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2", "pwritev2"]
COPY_CALLS = ["copy_file_range", "sendfile", "splice"]


def exported(sym):
    out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True).stdout
    return re.search(r"\s" + re.escape(sym) + r"(@|$)", out, re.M) is not None


COUNT_COPIES = all(exported(s) for s in COPY_CALLS)


# ---------------------------------------------------------------- the programs
def files(d, n, size, sub="src"):
    os.makedirs(os.path.join(d, sub), exist_ok=True)
    for i in range(n):
        with open(os.path.join(d, sub, "f%04d.txt" % i), "wb") as f:
            f.write((b"%06d " % i) * ((size + i % 7) // 7))
        # An hour old: git re-reads ("racy git") a file whose mtime falls in the
        # index's own clock tick, so a fast run would read twice what a slow one does.
        t = time.time() - 3600
        os.utime(os.path.join(d, sub, "f%04d.txt" % i), (t, t))


def text(d, name, mb):
    with open(os.path.join(d, name), "wb") as f:
        for i in range(mb * 16):
            f.write(b"".join(b"line %d of block %d: the quick brown fox\n" % (k, i) for k in range(1400)))


def setup_tarx(d):
    files(d, 1000, 1500, "tmp")
    with tarfile.open(os.path.join(d, "in.tar"), "w") as t:
        t.add(os.path.join(d, "tmp"), arcname="src")
    shutil.rmtree(os.path.join(d, "tmp"))
    os.mkdir(os.path.join(d, "x"))


def setup_make(d):
    os.mkdir(os.path.join(d, "m"))
    for i in range(12):
        with open(os.path.join(d, "m", "u%02d.c" % i), "w") as f:
            f.write("int u%02d(int x) { int s = 0; for (int k = 0; k < x; ++k) s += k * %d; return s; }\n" % (i, i))
    with open(os.path.join(d, "m", "main.c"), "w") as f:
        f.write("#include <stdio.h>\n" + "".join("int u%02d(int);\n" % i for i in range(12)) +
                "int main(void) { long s = 0;\n" + "".join("  s += u%02d(10);\n" % i for i in range(12)) +
                '  printf("%ld\\n", s); return 0; }\n')
    objs = " ".join("u%02d.o" % i for i in range(12))
    with open(os.path.join(d, "m", "Makefile"), "w") as f:
        f.write("prog: main.o %s\n\tgcc -o $@ $^\n%%.o: %%.c\n\tgcc -O1 -c $< -o $@\n" % objs)


def setup_java(d):
    with open(os.path.join(d, "W.java"), "w") as f:
        f.write("import java.io.*; public class W { public static void main(String[] a) throws Exception {\n"
                " for (int i = 0; i < 50; i++) try (FileOutputStream o = new FileOutputStream(\"j\" + i + \".dat\")) {"
                " o.write(new byte[4096 + i]); }\n"
                " long n = 0; for (int i = 0; i < 50; i++) try (FileInputStream in = new FileInputStream(\"j\" + i + \".dat\")) {"
                " byte[] b = new byte[8192]; int k; while ((k = in.read(b)) > 0) n += k; }\n"
                " System.out.println(n); } }\n")


PY = r"""
import os
for i in range(300):
    with open('p%03d.dat' % i, 'wb') as f:
        f.write(os.urandom(0) + bytes(1000 + i))
n = 0
for i in range(300):
    with open('p%03d.dat' % i, 'rb') as f:
        n += len(f.read())
print(n)
"""

GITENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
          "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
          "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}

SQL = ("create table t(k integer primary key, v text); "
       "with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000) "
       "insert into t select x, printf('value %d', x) from c; "
       "create index iv on t(v); select count(*), sum(length(v)) from t;")

# name: (programs it needs, setup(dir), argv or shell string, extra env, what README says is not seen)
PROGRAMS = {
    "python3": (["python3"], None, ["python3", "-c", PY], {}, None),
    "tar-c": (["tar"], lambda d: files(d, 1000, 1500), ["tar", "cf", "out.tar", "src"], {}, None),
    "tar-x": (["tar"], setup_tarx, ["tar", "xf", "in.tar", "-C", "x"], {}, None),
    "gzip": (["gzip"], lambda d: text(d, "f.txt", 2), "gzip -k -6 f.txt && gzip -t f.txt.gz", {}, None),
    "xz": (["xz"], lambda d: text(d, "f.txt", 1), ["xz", "-k", "-T1", "-1", "f.txt"], {}, None),
    "cp": (["cp"], lambda d: files(d, 300, 3000), ["cp", "-r", "src", "dst"], {},
           None if COUNT_COPIES else "copy_file_range"),
    "dd": (["dd"], lambda d: text(d, "f.txt", 2), ["dd", "if=f.txt", "of=g.bin", "bs=64k", "status=none"], {}, None),
    "git": (["git"], lambda d: files(d, 200, 800),
            "git init -q . && git add src && git commit -q -m files && git log --format=%H", GITENV,
            "getc_unlocked, inlined by glibc's headers, of .git/config"),
    "sqlite3": (["sqlite3"], None, ["sqlite3", "db.sqlite", SQL], {}, None),
    "make-gcc": (["make", "gcc"], setup_make, "make -s -C m -j2 && ./m/prog", {}, None),
    "java": (["java", "javac"], setup_java, "javac -d . W.java && java -Xshare:off -cp . W", {}, None),
}


# ---------------------------------------------------------------- running
class Listener:
    """A loopback TCP receiver keeping every line sent to it, connection after connection."""

    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(64)
        self.port = self.s.getsockname()[1]
        self.data = []
        self.lock = threading.Lock()
        self.threads = []
        self.stop = False
        self.t = threading.Thread(target=self.accept, daemon=True)
        self.t.start()

    def accept(self):
        self.s.settimeout(0.05)
        while True:
            try:
                c, _ = self.s.accept()
            except socket.timeout:
                if self.stop:  # stop is set once the senders have exited: nothing more is queued
                    return
                continue
            except OSError:
                return
            c.settimeout(None)
            t = threading.Thread(target=self.read, args=(c,), daemon=True)
            t.start()
            self.threads.append(t)

    def read(self, c):
        # One buffer per connection: chunks of concurrent senders (make -j2's
        # processes) must not interleave mid-line.
        got = []
        while True:
            b = c.recv(1 << 16)
            if not b:
                break
            got.append(b)
        c.close()
        whole = b"".join(got)
        if whole and not whole.endswith(b"\n"):
            whole += b"\n"  # a cut last line stays its own line (and fails to parse, named)
        with self.lock:
            self.data.append(whole)

    def finish(self):
        self.stop = True
        self.t.join(10)  # takes every connection already queued first
        self.s.close()
        for t in self.threads:
            t.join(10)
        return b"".join(self.data).decode()


def run(cmd, cwd, env, timeout=TIMEOUT):
    shell = isinstance(cmd, str)
    try:
        p = subprocess.run(cmd if not shell else ["sh", "-c", cmd], cwd=cwd, env=env, capture_output=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return "timeout", b"", b""


STRACE_LINE = re.compile(r"^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+)")
FD_PATH = re.compile(r"^-?\d+<([^>]*)>")


def norm(path):
    """Temporary names made with random letters (git's tmp_obj_XXXXXX) compare as one name."""
    return re.sub(r"(tmp_obj_|tmp_idx_|tmp_pack_|tmp_rev_)\w+", r"\1*", path)


def kernel_bytes(trace_file, root):
    """Bytes the read/write family moved on files under root, from strace -f -y
    output: {(op, path relative to root): bytes}."""
    pending = {}
    got = collections.Counter()
    calls = DATA_CALLS + (COPY_CALLS if COUNT_COPIES else [])
    with open(trace_file, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^(\d+)\s+(.*) <unfinished \.\.\.>$", line)
            if m:
                pending[m.group(1)] = m.group(2)
                continue
            m = re.match(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$", line)
            if m and m.group(1) in pending:
                line = m.group(1) + " " + pending.pop(m.group(1)) + m.group(3)
            m = STRACE_LINE.match(line)
            if not m or m.group(2) not in calls:
                continue
            n = int(m.group(4))
            if n <= 0:
                continue
            args = m.group(3)
            name = m.group(2)
            if name in COPY_CALLS:
                paths = re.findall(r"\d+<([^>]*)>", args)
                if name == "sendfile":  # sendfile(out, in, ...)
                    paths = paths[::-1]
                if len(paths) >= 2:
                    if paths[0].startswith(root):
                        got[("read", norm(paths[0][len(root):]))] += n
                    if paths[1].startswith(root):
                        got[("write", norm(paths[1][len(root):]))] += n
                continue
            p = FD_PATH.match(args)
            if not p or not p.group(1).startswith(root):
                continue
            got[("read" if name.startswith(("read", "pread")) else "write", norm(p.group(1)[len(root):]))] += n
    return got


def traced_bytes(text_out, root):
    """{(op, path relative to root, layer): bytes}, tracer.dropped, records naming a deleted path."""
    got = collections.Counter()
    dropped = deleted = 0
    for line in text_out.splitlines():
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except ValueError as e:
            raise SystemExit("a traced record is not JSON (%s): %r" % (e, line[:400]))
        if d.get("event.dataset") == "iosonar.tracer":
            dropped += d.get("tracer.dropped", 0)
            continue
        p = d.get("file.path", "")
        if d.get("io.op") in ("read", "write") and p.startswith(root):
            got[(d["io.op"], norm(p[len(root):]), d.get("io.layer"))] += d.get("io.bytes", 0)
        if p.endswith(" (deleted)"):
            deleted += 1
    return got, dropped, deleted


def over(mismatch):
    """A mismatch where the tracer counted more than the kernel moved."""
    m = re.search(r": (\d+) bytes traced, the kernel's (\d+)$", mismatch)
    return bool(m) and int(m.group(1)) > int(m.group(2))


def compare(want, got):
    """Per file and direction: the tracer's bytes against the kernel's. A file the
    program reached through stdio (README: counted at the stdio layer, the bytes
    the program asked for, while the kernel's reads fill stdio's buffer) must be
    seen, not equal. Returns (totals, mismatches)."""
    stdio = {(op, f) for (op, f, layer) in got if layer == "stdio"}
    posix = collections.Counter()
    tot = collections.Counter()
    for (op, f, layer), n in got.items():
        tot["traced_" + op] += n
        if layer == "posix":
            posix[(op, f)] += n
    bad = []
    for key in set(want) | set(posix) | stdio:
        op, f = key
        tot["kernel_" + op] += want[key]
        if key in stdio:
            if want[key] > 0 and not any(n > 0 for (o2, f2, _), n in got.items() if (o2, f2) == key):
                bad.append("%s %s: the kernel's %d bytes, none traced" % (op, f, want[key]))
        elif posix[key] != want[key]:
            bad.append("%s %s: %d bytes traced, the kernel's %d" % (op, f, posix[key], want[key]))
    return tot, sorted(bad)


def prepare(name, setup):
    d = tempfile.mkdtemp(prefix="iosonar-accept-%s-" % name, dir="/tmp")
    d = os.path.realpath(d)
    if setup:
        setup(d)
    return d


def main():
    failures = []
    base_env = dict(os.environ)
    for k in list(base_env):
        if k.startswith("IOSONAR_") or k == "LD_PRELOAD":
            del base_env[k]
    base_env["PATH"] = "/usr/bin:/bin"  # Debian's programs, not wrappers (a pyenv shim is a shell script)
    base_env["LC_ALL"] = "C"
    shm = tempfile.mkdtemp(prefix="iosonar-accept-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else "/tmp")
    ring = os.path.join(shm, "iosonar-ring-%d" % os.geteuid())
    os.mkdir(ring, 0o700)
    spool = tempfile.mkdtemp(prefix="iosonar-accept-spool-")
    agent = None
    t_start = time.time()
    try:
        if "agent" in MODES:
            agent_out = os.path.join(spool, "agent.jsonl")
            agent_log = open(os.path.join(spool, "agent.log"), "w")
            agent = subprocess.Popen([AGENT, "agent", "--ring-root", shm, "--output", agent_out, "--interval", "0.1"],
                                     stdout=agent_log, stderr=agent_log)
        for name, (needs, setup, cmd, extra, unseen) in PROGRAMS.items():
            if ONLY and name not in ONLY:
                continue
            if not all(shutil.which(n, path="/usr/bin:/bin") for n in needs):
                print("%-9s skipped: %s not installed" % (name, ", ".join(n for n in needs if not shutil.which(n, path="/usr/bin:/bin"))))
                continue
            env = dict(base_env, **extra)
            # The reference: untraced, under strace.
            d0 = prepare(name, setup)
            tr = os.path.join(spool, name + ".strace")
            calls = ",".join(DATA_CALLS + COPY_CALLS)
            rc0, out0, err0 = run(["strace", "-f", "-qq", "-y", "-s", "0", "-e", "trace=" + calls, "-e", "signal=none",
                                   "-o", tr, "--"] + (["sh", "-c", cmd] if isinstance(cmd, str) else cmd), d0, env)
            if rc0 != 0:
                failures.append("%s: the untraced run failed (%s): %s" % (name, rc0, err0[-300:]))
                continue
            want = kernel_bytes(tr, d0 + "/")
            shutil.rmtree(d0)
            for mode in MODES:
                d = prepare(name, setup)
                tenv = dict(env, LD_PRELOAD=LIB, IOSONAR_SPOOL_DIR=spool, IOSONAR_RING_DIR=ring,
                            IOSONAR_LOG=os.path.join(spool, "tracer.log"))
                listener = None
                out_file = os.path.join(spool, "%s-%s.jsonl" % (name, mode))
                if mode == "file":
                    tenv["IOSONAR_OUTPUT"] = out_file
                elif mode == "tcp":
                    listener = Listener()
                    tenv["IOSONAR_OUTPUT"] = "tcp://127.0.0.1:%d" % listener.port
                else:
                    tenv["IOSONAR_OUTPUT"] = "agent"
                    mark = os.path.getsize(agent_out) if os.path.exists(agent_out) else 0
                t0 = time.time()
                rc, out, err = run(cmd, d, tenv)
                took = time.time() - t0
                if mode == "file":
                    text_out = open(out_file).read() if os.path.exists(out_file) else ""
                elif mode == "tcp":
                    text_out = listener.finish()
                else:
                    deadline = time.time() + 30
                    while os.listdir(ring) and time.time() < deadline:
                        time.sleep(0.05)
                    if os.listdir(ring):
                        failures.append("%s/%s: the agent left rings: %s" % (name, mode, os.listdir(ring)[:3]))
                    with open(agent_out) as f:
                        f.seek(mark)
                        text_out = f.read()
                got, dropped, deleted = traced_bytes(text_out, d + "/")
                shutil.rmtree(d)
                what = "%s/%s" % (name, mode)
                if rc == "timeout":
                    failures.append("%s: no end within %d s (hang)" % (what, TIMEOUT))
                    continue
                if rc != rc0:
                    failures.append("%s: exit status %s, untraced %s" % (what, rc, rc0))
                if out != out0:
                    failures.append("%s: stdout differs: %r vs %r" % (what, out[:200], out0[:200]))
                if err != err0:
                    failures.append("%s: stderr differs: %r vs %r" % (what, err[:300], err0[:300]))
                if dropped:
                    failures.append("%s: tracer.dropped %d" % (what, dropped))
                if deleted:
                    failures.append("%s: %d records name a path ending in ' (deleted)'" % (what, deleted))
                tot, bad = compare(want, got)
                if unseen:  # README names what is not seen here: fewer bytes are right, more are not
                    bad = [b for b in bad if over(b)]
                failures += ["%s: %s" % (what, b) for b in bad[:5]]
                if len(bad) > 5:
                    failures.append("%s: %d more files differ" % (what, len(bad) - 5))
                print("%-9s %-5s read %9d/%9d  write %9d/%9d  (traced/kernel)  %.2f s%s" %
                      (name, mode, tot["traced_read"], tot["kernel_read"], tot["traced_write"], tot["kernel_write"], took,
                       "  [README: %s not seen]" % unseen if unseen else ""))
                sys.stdout.flush()
    finally:
        if agent:
            agent.send_signal(signal.SIGTERM)
            try:
                agent.wait(20)
            except subprocess.TimeoutExpired:
                agent.kill()
        shutil.rmtree(shm, ignore_errors=True)
        log = os.path.join(spool, "tracer.log")
        if os.path.exists(log) and os.path.getsize(log):
            print("tracer log:\n" + open(log).read()[:2000])
        shutil.rmtree(spool, ignore_errors=True)
    print("%.0f s" % (time.time() - t_start))
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
