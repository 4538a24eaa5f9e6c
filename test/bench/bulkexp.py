# Engine-side _bulk ingest rate (test/bench/RESULTS.md, "Real engines"): python3 bulkexp.py SIM.jsonl PORT NS STREAMS DOCS_PER_BULK [gzip]
# Engine-side ingest capacity: the same trace records posted as _bulk create
# bodies of N docs, over 1 or 2 concurrent connections (plain http, OpenSearch).
import json, sys, time, threading, http.client, gzip as gz
src, port, ns, streams, per = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
use_gzip = len(sys.argv) > 6 and sys.argv[6] == 'gzip'
lines = [l for l in open(src) if '"iosonar.trace"' in l][:200000]
bodies = []
for i in range(0, len(lines), per):
    b = []
    for l in lines[i:i+per]:
        d = json.loads(l)
        b.append(json.dumps({"create": {"_index": "logs-iosonar.trace-" + ns, "_id": "%d-%d" % (d["event.stream"], d["event.seq"])}}))
        b.append(l.rstrip('\n'))
    bodies.append(('\n'.join(b) + '\n').encode())
lock = threading.Lock(); idx = [0]; errs = [0]
def worker():
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=600)
    while True:
        with lock:
            if idx[0] >= len(bodies): return
            body = bodies[idx[0]]; idx[0] += 1
        h = {'Content-Type': 'application/x-ndjson'}
        if use_gzip: body = gz.compress(body, 1); h['Content-Encoding'] = 'gzip'
        c.request('POST', '/_bulk', body, h)
        r = c.getresponse(); data = r.read()
        if r.status != 200 or b'"errors":true' in data: errs[0] += 1
t0 = time.time()
ts = [threading.Thread(target=worker) for _ in range(streams)]
[t.start() for t in ts]; [t.join() for t in ts]
dt = time.time() - t0
print("%d docs, %d streams, %d per bulk, gzip=%s: %.1f s, %.0f docs/s, errors %d" % (len(lines), streams, per, use_gzip, dt, len(lines)/dt, errs[0]))
