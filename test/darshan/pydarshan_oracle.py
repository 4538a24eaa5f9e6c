#!/usr/bin/env python3
"""pydarshan (PyPI `darshan`, the Darshan project's own reader, libdarshan-util)
as the oracle of iosonar's Darshan reader and import (test/darshan/test_darshan.py).

  pydarshan_oracle.py dump LOG          the log as darshan_dump prints it (JSON)
  pydarshan_oracle.py convert IN OUT    IN rewritten by libdarshan-util itself (format 3.41, the
                                        library's current version, zlib): what darshan-convert does
  pydarshan_oracle.py copies LOG|DIR... OUTDIR N   N 3.41 rewrites cycling through the inputs, job ids 1000000+i
  pydarshan_oracle.py serve             the commands above, one JSON list of arguments per stdin line
  pydarshan_oracle.py swap IN OUT       IN with every multi-byte number in the other byte order (a log
                                        as a big-endian machine writes it); pydarshan reads it back
"""
import json
import struct
import sys
import zlib

import darshan
from darshan.backend import cffi_backend as cb


def dump(path):
    r = darshan.DarshanReport(path, read_all=True, dtype="numpy")
    job = r.metadata["job"]
    mods = []
    out = {
        "version": job["log_ver"],
        "job": {k: job[k] for k in ("uid", "nprocs", "jobid", "start_time_sec", "start_time_nsec",
                                   "end_time_sec", "end_time_nsec")},
        "exe": r.metadata.get("exe", ""),
        "modules": mods,
        "records": [],
    }
    for name, m in r.modules.items():
        mods.append({"name": name, "version": m["ver"], "partial": bool(m["partial_flag"]),
                     "records": m["num_records"]})
    for name in ("POSIX", "MPI-IO", "STDIO"):
        for rec in r.records.get(name, []):
            out["records"].append({"module": name, "id": int(rec["id"]), "rank": int(rec["rank"]),
                                   "counters": [int(x) for x in rec["counters"]],
                                   "fcounters": [float(x) for x in rec["fcounters"]]})
    for rec in r.records.get("LUSTRE", []):
        comps = [[int(c["counters"][0]), int(c["counters"][1])] for c in rec["components"]]
        osts = [int(o) for c in rec["components"] for o in c["ost_ids"]]
        out["records"].append({"module": "LUSTRE", "id": int(rec["id"]), "rank": int(rec["rank"]),
                               "components": comps, "osts": osts})
    for name in ("DXT_POSIX", "DXT_MPIIO"):
        for rec in r.records.get(name, []):
            segs = [[1, int(s["offset"]), int(s["length"]), float(s["start_time"]), float(s["end_time"])]
                    for s in rec["write_segments"]]
            segs += [[0, int(s["offset"]), int(s["length"]), float(s["start_time"]), float(s["end_time"])]
                     for s in rec["read_segments"]]
            out["records"].append({"module": name, "id": int(rec["id"]), "rank": int(rec["rank"]),
                                   "hostname": rec["hostname"], "segments": segs})
    return out


# ---- convert: libdarshan-util's own writer -----------------------------------
_CDEF_DONE = False


def convert(src, dst, jobid=None):
    ffi = cb.ffi
    global _CDEF_DONE
    if not _CDEF_DONE:
        ffi.cdef("""
        struct iosonar_logutil_funcs { int (*log_get_record)(void*, void**); int (*log_put_record)(void*, void*); };
        extern struct iosonar_logutil_funcs *mod_logutils[];
        void* darshan_log_create(char *, int, int);
        int darshan_log_put_job(void*, struct darshan_job *);
        int darshan_log_put_exe(void*, char *);
        int darshan_log_put_mounts(void*, struct darshan_mnt_info *, int);
        int darshan_log_put_namehash(void*, struct darshan_name_record_ref *);
        """, override=True)
        _CDEF_DONE = True
    lib = cb.libdutil
    fin = lib.darshan_log_open(src.encode())
    if fin == ffi.NULL:
        raise SystemExit("cannot open " + src)
    job = ffi.new("struct darshan_job *")
    assert lib.darshan_log_get_job(fin, job) == 0
    if jobid is not None:
        job.jobid = jobid
    exe = ffi.new("char[]", 4096)
    assert lib.darshan_log_get_exe(fin, exe) == 0
    mnts = ffi.new("struct darshan_mnt_info **")
    nmnt = ffi.new("int *")
    assert lib.darshan_log_get_mounts(fin, mnts, nmnt) == 0
    names = ffi.new("struct darshan_name_record_ref **")
    assert lib.darshan_log_get_namehash(fin, names) == 0
    mods = ffi.new("struct darshan_mod_info **")
    nmods = ffi.new("int *")
    lib.darshan_log_get_modules(fin, mods, nmods)
    partial = 0
    for i in range(nmods[0]):
        if mods[0][i].partial_flag:
            partial |= 1 << mods[0][i].idx
    fout = lib.darshan_log_create(dst.encode(), 0, partial)
    if fout == ffi.NULL:
        raise SystemExit("cannot create " + dst)
    assert lib.darshan_log_put_job(fout, job) == 0
    assert lib.darshan_log_put_exe(fout, exe) == 0
    assert lib.darshan_log_put_mounts(fout, mnts[0], nmnt[0]) == 0
    assert lib.darshan_log_put_namehash(fout, names[0]) == 0
    idxs = sorted(mods[0][i].idx for i in range(nmods[0]))
    for idx in idxs:
        funcs = lib.mod_logutils[idx]
        if funcs == ffi.NULL:
            continue
        buf = ffi.new("void **")
        while True:
            rc = funcs.log_get_record(fin, buf)
            if rc < 0:
                raise SystemExit("read error in module %d" % idx)
            if rc == 0:
                break
            assert funcs.log_put_record(fout, buf[0]) == 0
            lib.darshan_free(buf[0])
            buf[0] = ffi.NULL
    lib.darshan_log_close(fout)
    lib.darshan_log_close(fin)


# ---- swap: the same log in the other byte order -------------------------------
# Layout facts (docs/darshan.md): the header's numbers, then zlib regions; in
# every region except the name records and strings, the data is 8-byte words.
def swap8(data, start, end):
    n = (end - start) // 8
    words = struct.unpack_from("<%dQ" % n, data, start)
    struct.pack_into(">%dQ" % n, data, start, *words)


def inflate_all(b):
    out = b""
    while b:
        d = zlib.decompressobj()
        out += d.decompress(b)
        b = d.unused_data
    return out


def swap(src, dst):
    raw = bytearray(open(src, "rb").read())
    ver = raw[:8].rstrip(b"\0").decode()
    minor = int(ver.split(".")[1])
    wide = minor >= 41
    nslots = 64 if wide else 16
    hdr = 1328 if wide else 360
    # header
    magic = struct.unpack_from("<q", raw, 8)[0]
    assert magic == 6567223, "input must be little-endian"
    swap8(raw, 8, 16)
    if wide:
        swap8(raw, 24, 32)
        maps_at = 32
    else:
        struct.pack_into(">I", raw, 20, struct.unpack_from("<I", raw, 20)[0])
        maps_at = 24
    maps = struct.unpack_from("<%dQ" % (2 * (nslots + 1)), raw, maps_at)
    vers = struct.unpack_from("<%dI" % nslots, raw, maps_at + 16 * (nslots + 1))
    swap8(raw, maps_at, maps_at + 16 * (nslots + 1))
    struct.pack_into(">%dI" % nslots, raw, maps_at + 16 * (nslots + 1), *vers)
    name_off, name_len = maps[0], maps[1]
    regions = []  # (kind, off, len, slot)
    job_end = name_off if name_off else min([maps[2 + 2 * i] for i in range(nslots) if maps[2 + 2 * i]] or [len(raw)])
    regions.append(("job", hdr, job_end - hdr, -1))
    if name_len:
        regions.append(("names", name_off, name_len, -1))
    for i in range(nslots):
        off, ln = maps[2 + 2 * i], maps[3 + 2 * i]
        if ln:
            regions.append(("mod", off, ln, i))
    # module ids of this version's slots (H5D came in 3.20, PNETCDF_VAR in 3.41)
    def mod_id(slot):
        mid = slot
        if minor < 20 and mid >= 4:
            mid += 1
        if minor < 41 and mid >= 6:
            mid += 1
        return mid
    out = bytearray(raw[:hdr])
    pieces = []
    for kind, off, ln, slot in regions:
        data = bytearray(inflate_all(bytes(raw[off:off + ln])))
        if kind == "job":
            nfix = 7 if wide else 5
            swap8(data, 0, 8 * nfix)
        elif kind == "names":
            p = 0
            while p + 9 <= len(data):
                swap8(data, p, p + 8)
                e = data.index(0, p + 8)
                p = e + 1
        else:
            mid = mod_id(slot)
            v = vers[slot]
            if mid == 8:  # LUSTRE
                p = 0
                while p < len(data):
                    if v == 1:
                        w = struct.unpack_from("<7q", data, p)
                        swap8(data, p, p + 56 + 8 * w[6])
                        p += 56 + 8 * w[6]
                    else:
                        nc, ns = struct.unpack_from("<2q", data, p + 16)
                        swap8(data, p, p + 32)
                        p += 32
                        for _ in range(nc):
                            swap8(data, p, p + 56)
                            p += 72
                        swap8(data, p, p + 8 * ns)
                        p += 8 * ns
            elif mid in (10, 11):  # DXT
                seg = 40 if (v >= 2 if mid == 10 else v >= 3) else 32
                p = 0
                while p < len(data):
                    wc, rc = struct.unpack_from("<2q", data, p + 88)
                    swap8(data, p, p + 24)
                    swap8(data, p + 88, p + 104)
                    p += 104
                    swap8(data, p, p + seg * (wc + rc))
                    p += seg * (wc + rc)
            else:  # POSIX, MPI-IO, STDIO, H5F, H5D, ...: fixed records of 8-byte numbers
                swap8(data, 0, len(data) - len(data) % 8)
        pieces.append((kind, slot, zlib.compress(bytes(data))))
    # lay the regions out again and fix the map
    pos = hdr
    newmaps = list(maps)
    for kind, slot, comp in pieces:
        if kind == "names":
            newmaps[0], newmaps[1] = pos, len(comp)
        elif kind == "mod":
            newmaps[2 + 2 * slot], newmaps[3 + 2 * slot] = pos, len(comp)
        out += comp
        pos += len(comp)
    struct.pack_into(">%dQ" % len(newmaps), out, maps_at, *newmaps)
    open(dst, "wb").write(out)


def serve():
    """One request per stdin line (a JSON list: the arguments of one command), one answer per
    stdout line ({"out": what the command prints} or {"error": why}): pydarshan and numpy are
    imported once per test, not once per log and command."""
    import io
    import os
    import traceback
    # Answers go to a private copy of stdout; the C library's own prints (fd 1) go to stderr.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    for line in sys.stdin:
        args = json.loads(line)
        buf = io.StringIO()
        try:
            old, sys.stdout = sys.stdout, buf
            try:
                run(args)
            finally:
                sys.stdout = old
            ans = {"out": buf.getvalue()}
        except BaseException:  # a SystemExit of a bad request too: the answer says it
            ans = {"error": traceback.format_exc()[-4000:]}
        answers.write(json.dumps(ans) + "\n")
        answers.flush()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve()
    else:
        run(sys.argv[1:])


def run(argv):
    argv = ["pydarshan_oracle.py"] + list(argv)
    cmd = argv[1]
    if cmd == "dump":
        print(json.dumps(dump(argv[2])))
    elif cmd == "convert":
        convert(argv[2], argv[3])
    elif cmd == "copies":  # copies SRCDIR_OR_LOG... OUTDIR N: N logs cycling through the inputs, job ids 1..N
        import glob as g
        import os
        srcs = []
        for x in argv[2:-2]:
            srcs += sorted(g.glob(os.path.join(x, "**", "*.darshan"), recursive=True)) if os.path.isdir(x) else [x]
        out, n = argv[-2], int(argv[-1])
        os.makedirs(out, exist_ok=True)
        for i in range(n):
            convert(srcs[i % len(srcs)], os.path.join(out, "copy-%05d.darshan" % i), 1000000 + i)
    elif cmd == "swap":
        swap(argv[2], argv[3])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
