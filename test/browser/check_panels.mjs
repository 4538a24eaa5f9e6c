// Drives Debian's chromium against a running `iosonar serve`: reads the
// numbers the job page's panels drew (SVG attributes and the drawn cells
// summed) and compares them with EXPECTED (computed by the caller from the
// simulator's ground truth); the administrator's heat map legend and levels.
// Screenshots of a page with a failure go to OUT_DIR.
// usage: node check_panels.mjs BASE_URL OUT_DIR EXPECTED.json
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';

const [base, out, expectedFile] = process.argv.slice(2);
const want = JSON.parse(readFileSync(expectedFile, 'utf8'));
const failures = [];
const fail = (m) => { failures.push(m); console.log('FAIL ' + m); };
const eq = (what, got, exp) => { if (got !== exp) fail(`${what}: drawn ${got}, expected ${exp}`); };

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
         '--disable-component-update', '--no-first-run'],
});

async function asUser(user, name, fn) {
  const ctx = await browser.newContext({ extraHTTPHeaders: { 'X-Remote-User': user }, viewport: { width: 1300, height: 900 } });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => fail(`${user}: page error ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') console.log(`${user} console: ${m.text()}`); });
  const before = failures.length;
  try { await fn(page); } finally {
    if (failures.length > before) await page.screenshot({ path: `${out}/FAILED-${name}.png`, fullPage: true }).catch(() => {});
    else await page.screenshot({ path: `${out}/${name}.png`, fullPage: true }).catch(() => {});
    await ctx.close();
  }
}

await asUser('daemon', `job-${want.job}`, async (page) => {
  const resp = await page.goto(`${base}/jobs/${want.job}`);
  eq('status', resp.status(), 200);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60000 });

  // Request sizes: every op of 1 MiB in the 100K-1M bin, nothing else.
  const bars = await page.$$eval('svg.sizes rect.bar', (rs) => rs.map((r) => ({ dir: r.dataset.dir, bin: r.dataset.bin, ops: Number(r.dataset.ops), h: Number(r.getAttribute('height')) })));
  eq('size bars', bars.length, 20);
  for (const b of bars) {
    const exp = b.dir === 'write' && b.bin === '100K-1M' ? want.write_ops_100K_1M : 0;
    eq(`${b.dir} requests ${b.bin}`, b.ops, exp);
    if ((b.h > 0) !== (exp > 0)) fail(`${b.dir} ${b.bin}: bar height ${b.h} for ${exp} ops`);
  }
  console.log(`sizes: write 100K-1M ${bars.find((b) => b.dir === 'write' && b.bin === '100K-1M')?.ops} ops`);

  // Operation counts.
  const ops = Object.fromEntries(await page.$$eval('svg.ops rect.bar', (rs) => rs.map((r) => [r.dataset.op, Number(r.dataset.value)])));
  eq('write ops', ops.write, want.write_ops_100K_1M);
  eq('read ops', ops.read, 0);
  eq('open ops', ops.open, want.opens);
  console.log(`ops: ${JSON.stringify(ops)}`);

  // I/O time against run time: the run's length is the truth's (whole seconds), I/O within it.
  const parts = Object.fromEntries(await page.$$eval('svg.iotime rect.bar', (rs) => rs.map((r) => [r.dataset.part, Number(r.dataset.value)])));
  if (!(Math.abs(parts.run - want.runtime_s) <= 1)) fail(`run time drawn ${parts.run} s, truth ${want.runtime_s} s`);
  if (!(parts.io > 0 && parts.io <= parts.run)) fail(`I/O per process ${parts.io} s against a ${parts.run} s run`);
  if (Math.abs(parts.io - (parts.read + parts.write + parts.other)) > 0.02) fail(`I/O ${parts.io} s is not its parts' sum`);
  console.log(`io time: ${JSON.stringify(parts)}`);

  // Per-process timeline: one row per rank, each rank's written bytes.
  const rows = await page.$$eval('div.timeline g[data-row]', (gs) => gs.map((g) => ({ name: g.dataset.row, w: Number(g.dataset.writeBytes), r: Number(g.dataset.readBytes), cells: g.querySelectorAll('rect.cell').length })));
  eq('timeline rows', rows.length, want.rows);
  for (const r of rows) {
    if (Math.abs(r.w - want.row_write_bytes) > 1) fail(`timeline ${r.name}: ${r.w} bytes written, expected ${want.row_write_bytes}`);
    eq(`timeline ${r.name} read`, r.r, 0);
    if (!r.cells) fail(`timeline ${r.name}: no cell drawn`);
  }
  console.log(`timeline: ${rows.length} rows of ${rows[0]?.w} bytes`);

  // Servers: each line's bytes are the job's bytes on that server; the lagging one is red.
  const lines = await page.$$eval('div.servers polyline', (ls) => ls.map((l) => ({ name: l.dataset.server, total: Number(l.dataset.total), lag: l.classList.contains('lagging'), stroke: getComputedStyle(l).stroke })));
  const drawn = Object.fromEntries(lines.map((l) => [l.name, l.total]));
  for (const [name, bytes] of Object.entries(want.servers))
    if (!(Math.abs((drawn[name] ?? -1) - bytes) <= 1)) fail(`server ${name}: drawn ${drawn[name]} bytes, truth ${bytes}`);
  for (const name of Object.keys(drawn)) if (!(name in want.servers)) fail(`server ${name} drawn, not in the truth`);
  const lagging = lines.filter((l) => l.lag).map((l) => l.name).sort();
  eq('lagging servers', JSON.stringify(lagging), JSON.stringify(want.lagging.slice().sort()));
  for (const l of lines) if (l.lag && l.stroke !== 'rgb(214, 39, 40)') fail(`${l.name}: lagging but stroked ${l.stroke}`);
  console.log(`servers: ${lines.length} lines, lagging ${lagging.join(',')}`);
  const first = await page.$eval('ol.diagnosis li', (li) => li.dataset.kind);
  console.log(`first finding: ${first}`);
});

await asUser('root', 'admin-heatmap', async (page) => {
  const resp = await page.goto(`${base}/admin?day=${want.day}`);
  eq('admin status', resp.status(), 200);
  const legend = await page.$$eval('ul.legend', (uls) => uls.map((u) => [...u.querySelectorAll('li')].map((li) => li.dataset.level).join(',')));
  if (!legend.length) fail('no heat map legend');
  for (const l of legend) if (l !== 'high,mid,low,idle' && l !== 'high,mid,low,idle,none') fail(`legend levels: ${l}`);
  // The simulated day is 480 s long from midnight: in hour 0 every OST has
  // load (the simulator's background load) and the forwarding nodes in front
  // of the jobs' nodes have, the others none; every later hour is idle;
  // levels follow the legend's bounds.
  const cells = await page.$$eval('svg.heatmap', (svgs) => svgs.map((s) => ({
    kind: s.dataset.kind, top: Number(s.dataset.top),
    legend: [...s.parentElement.querySelectorAll('ul.legend li')].map((li) => li.dataset.level).join(','),
    cells: [...s.querySelectorAll('rect')].map((r) => ({ server: r.dataset.server, level: r.dataset.level, hour: Number(r.dataset.hour), value: r.dataset.value === '' ? null : Number(r.dataset.value), fill: getComputedStyle(r).fill })),
  })));
  // Bytes of OSTs and forwarding nodes; the OSTs' IOPS, disk I/O time
  // (brw_stats) and ost_io wait, which the simulator samples.
  eq('heat maps', cells.map((m) => m.kind).join(','), 'ost,forwarding,ost-iops,ost-io-time,ost-wait');
  const fills = {};
  for (const m of cells) {
    const ops = m.kind.startsWith('ost-');
    for (const c of m.cells) {
      // Bytes: every hour has a value (idle without records). Operations and
      // latency: sampled in hour 0 only (the simulated 480 s), "none" after.
      const busy = c.hour === 0 && (m.kind !== 'forwarding' || want.busy_forwarding.includes(c.server));
      if (ops && (c.value === null) !== (c.hour !== 0)) fail(`${m.kind} ${c.server} hour ${c.hour}: value ${c.value}, expected ${c.hour ? 'not sampled' : 'a value'}`);
      if (c.value === null) {
        if (c.level !== 'none') fail(`${m.kind} ${c.server} hour ${c.hour}: not sampled but level ${c.level}`);
      } else {
        if ((c.level !== 'idle') !== busy) fail(`${m.kind} ${c.server} hour ${c.hour}: ${c.level}, expected ${busy ? 'load' : 'idle'}`);
        const exp = c.value >= m.top * 2 / 3 ? 'high' : c.value >= m.top / 3 ? 'mid' : c.value > 0 ? 'low' : 'idle';
        if (c.level !== exp) fail(`${m.kind} ${c.server} hour ${c.hour} (${c.value} of ${m.top}): level ${c.level}, expected ${exp}`);
      }
      (fills[c.level] = fills[c.level] || new Set()).add(c.fill);
    }
    if (ops !== m.legend.endsWith(',none')) fail(`${m.kind}: legend ${m.legend}`);
  }
  // The simulator's slow OST (the truth) has the longest disk I/O time of
  // hour 0, and its OSS the longest ost_io wait.
  const hour0 = (kind) => Object.fromEntries(cells.find((m) => m.kind === kind).cells.filter((c) => c.hour === 0).map((c) => [c.server, c.value]));
  const slowOst = want.lagging.find((n) => n.includes('OST'));
  for (const kind of ['ost-io-time', 'ost-wait']) {
    const v = hour0(kind);
    const top = Math.max(...Object.values(v));
    if (!(v[slowOst] === top)) fail(`${kind}: ${slowOst} (the truth's slow OST) has ${v[slowOst]}, the largest is ${top}: ${JSON.stringify(v)}`);
    const others = Object.entries(v).filter(([n]) => n !== slowOst).map(([, x]) => x);
    if (kind === 'ost-io-time' && !(Math.max(...others) < top)) fail(`${kind}: another OST is as slow as ${slowOst}: ${JSON.stringify(v)}`);
    console.log(`${kind} hour 0: ${slowOst} ${v[slowOst]} ms, others up to ${Math.max(...others)} ms`);
  }
  for (const [lv, set] of Object.entries(fills)) if (set.size !== 1) fail(`level ${lv} drawn in ${set.size} colours`);
  if (new Set(Object.values(fills).map((s) => [...s][0])).size !== Object.keys(fills).length) fail('two levels share a colour');
  console.log(`heat map levels: ${Object.keys(fills).sort().join(',')}`);
});

await browser.close();
console.log(failures.length ? `${failures.length} failures` : 'ok');
process.exit(failures.length ? 1 : 0);
