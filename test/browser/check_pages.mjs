// Drives Debian's chromium (playwright-core, executablePath) against a running
// `iosonar serve`: each user's job page has its plots drawn with data, the
// other user's job is 404, a job name with HTML stays text (no script runs),
// and the administrator's heatmap is there. Screenshots go to OUT_DIR.
// usage: node check_pages.mjs BASE_URL OUT_DIR
import { chromium } from 'playwright-core';

const [base, out] = process.argv.slice(2);
const failures = [];
const fail = (m) => { failures.push(m); console.log('FAIL ' + m); };

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
         '--disable-component-update', '--no-first-run'],
});

async function asUser(user, fn) {
  const ctx = await browser.newContext({ extraHTTPHeaders: { 'X-Remote-User': user }, viewport: { width: 1200, height: 900 } });
  const page = await ctx.newPage();
  page.on('dialog', async (d) => { fail(`${user}: a dialog opened (script ran): ${d.message()}`); await d.dismiss(); });
  page.on('pageerror', (e) => fail(`${user}: page error ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') console.log(`${user} console: ${m.text()}`); });
  try { await fn(page); } finally { await ctx.close(); }
}

// Plots drawn with data: each chart div has a canvas with painted pixels and
// data points; returns how many.
async function plotsOf(page, what) {
  const charts = await page.$$eval('div.chart', (divs) => divs.map((d) => {
    const c = d.querySelector('canvas');
    let painted = 0;
    if (c) {
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      for (let i = 3; i < px.length; i += 4) if (px[i] !== 0) painted++;
    }
    return { kind: d.getAttribute('data-chart'), points: Number(d.getAttribute('data-points') || 0), painted };
  }));
  let plots = 0;
  for (const c of charts) {
    if (c.points > 0 && c.painted > 0) plots++;
    else fail(`${what}: chart ${c.kind} is empty (points ${c.points}, painted ${c.painted})`);
  }
  return plots;
}

async function checkJob(page, user, job, shot) {
  const before = failures.length;
  const resp = await page.goto(`${base}/jobs/${job}`);
  if (resp.status() !== 200) { fail(`${user} /jobs/${job}: status ${resp.status()}`); return; }
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60000 });
  const plots = await plotsOf(page, `${user} /jobs/${job}`);
  const phases = await page.$$eval('div.phases tr', (rows) => rows.length);
  if (phases < 2) fail(`${user} /jobs/${job}: no phase rows`);
  console.log(`${user} /jobs/${job}: plots ${plots}, phase rows ${phases - 1}`);
  // The chart's axes: values from zero, time over the job's buckets (not
  // years), and its peaks the summary's.
  const axes = await page.$eval('div.chart[data-chart="bandwidth"]', (d) => ({
    read: d.getAttribute('data-peak-read'), write: d.getAttribute('data-peak-write'),
    ymin: d.getAttribute('data-y-min'), span: Number(d.getAttribute('data-x-span')) }));
  const summary = await page.$$eval('span.peak', (els) => Object.fromEntries(els.map((e) => [e.dataset.dir, e.dataset.bps])));
  if (axes.ymin !== '0') fail(`${user} /jobs/${job}: the bandwidth axis starts at ${axes.ymin}`);
  if (!(axes.span >= 1 && axes.span <= 120)) fail(`${user} /jobs/${job}: the time axis spans ${axes.span} s`);
  for (const dir of ['read', 'write'])
    if (axes[dir] !== summary[dir]) fail(`${user} /jobs/${job}: chart ${dir} peak ${axes[dir]}, summary ${summary[dir]}`);
  console.log(`${user} /jobs/${job}: peaks read ${summary.read} write ${summary.write} as charted, x span ${axes.span} s`);
  // The panels: request-size bars, and the timelines fetched (under the
  // prefix too) and drawn with a row per process and a line per server.
  const sizeBars = await page.$$eval('svg.sizes rect.bar', (rs) => rs.length);
  const tlRows = await page.$$eval('div.timeline g[data-row]', (gs) => gs.length);
  const srvLines = await page.$$eval('div.servers polyline', (ls) => ls.length);
  if (sizeBars !== 20) fail(`${user} /jobs/${job}: ${sizeBars} request-size bars`);
  if (tlRows < 1) fail(`${user} /jobs/${job}: no timeline row`);
  if (srvLines < 1) fail(`${user} /jobs/${job}: no server line`);
  console.log(`${user} /jobs/${job}: timeline rows ${tlRows}, server lines ${srvLines}`);
  // The diagnosis heads the page.
  const order = await page.$$eval('h2', (hs) => hs.map((h) => h.textContent));
  if (order[0] !== 'Diagnosis') fail(`${user} /jobs/${job}: the first section is ${order[0]}`);
  if (shot) await page.screenshot({ path: `${out}/${shot}`, fullPage: true });
  if (failures.length > before)
    await page.screenshot({ path: `${out}/FAILED-${user}-job-${job.replace(/[^0-9a-z]/gi, '_')}.png`, fullPage: true });
}

await asUser('daemon', async (page) => {
  await checkJob(page, 'daemon', '101', 'job-101.png');
  // 101 has a stored anomaly (the test inserted it): its first finding is the lagging OST.
  const first = await page.$eval('ol.diagnosis li', (li) => ({ kind: li.dataset.kind, text: li.textContent }));
  if (first.kind !== 'slow_server' || !first.text.includes('simfs-OST0001'))
    fail(`daemon /jobs/101: the first finding is ${first.kind}: ${first.text}`);
  console.log(`daemon /jobs/101: first finding ${first.kind}: ${first.text}`);
  const name = await page.$eval('h1 .name', (e) => e.textContent);
  if (name !== '<script>alert(1)</script>') fail(`daemon: the job name shows as '${name}'`);
  const other = await page.goto(`${base}/jobs/102`);
  if (other.status() !== 404) fail(`daemon /jobs/102: status ${other.status()}, not 404`);
  const otherCluster = await page.goto(`${base}/jobs/104?cluster=beta`);
  if (otherCluster.status() !== 404) fail(`daemon /jobs/104?cluster=beta: status ${otherCluster.status()}, not 404`);
  const list = await page.goto(`${base}/jobs`);
  const text = await page.textContent('table.jobs');
  if (list.status() !== 200 || !text.includes('101') || text.includes('bins-app')) fail('daemon /jobs: wrong list');
  await page.screenshot({ path: `${out}/jobs.png`, fullPage: true });
});
await asUser('bin', async (page) => {
  await checkJob(page, 'bin', '102', 'job-102.png');
  await checkJob(page, 'bin', '104?cluster=beta', 'job-104-beta.png');  // another cluster's job
  const other = await page.goto(`${base}/jobs/101`);
  if (other.status() !== 404) fail(`bin /jobs/101: status ${other.status()}, not 404`);
});
await asUser('root', async (page) => {
  const resp = await page.goto(`${base}/admin?day=2026-11-22&job=101`);
  if (resp.status() !== 200) fail(`root /admin: status ${resp.status()}`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60000 });
  const cells = await page.$$eval('svg.heatmap rect', (r) => r.length);
  if (cells < 24) fail(`root /admin: heatmap has ${cells} cells`);
  const plots = await plotsOf(page, 'root /admin');
  console.log(`root /admin: heatmap cells ${cells}, plots ${plots}`);
  const lassiBase = await page.$eval('#lassi-baseline', (e) => e.textContent).catch(() => null);
  console.log(`root /admin: ${lassiBase}`);
  await page.screenshot({ path: `${out}/admin-heatmap.png`, fullPage: true });
  await checkJob(page, 'root', '102', null);
});
await browser.close();
console.log(failures.length ? `${failures.length} failures` : 'ok');
process.exit(failures.length ? 1 : 0);
