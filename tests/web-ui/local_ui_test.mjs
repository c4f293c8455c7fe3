// Browser test of the web UI in local mode: `taas run --keep-ui` on a small linear-regression job
// (1 PS, 1 worker that is the chief, 1 evaluator) prints one `UI: http://.../#token=...` line;
// Chromium (Debian's, driven by playwright-core) opens that URL, sees the job and its replicas,
// opens the job detail, sees a replica's log (the evaluator's 10 MiB line cut behind the marker)
// and the loss chart get points, the cluster page
// with this machine, no New job, Clone or Delete anywhere, and the New-job route's explanation
// with the equivalent commands instead of a form. Then Ctrl-C ends
// the launcher with the job's exit code. Screenshots go to --artifacts. Prints "N passed, N failed".
//
// Usage: node local_ui_test.mjs --taas BIN --assets DIR --web-ui DIR --artifacts DIR
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { assert, launchChromium, parseArgs, Run, sleep, waitFor, waitText } from './harness.mjs';

const args = parseArgs(process.argv, ['taas', 'assets', 'web-ui', 'artifacts']);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'taas-local-ui-'));
fs.mkdirSync(args.artifacts, { recursive: true });
const run = new Run('local ui');
const check = (title, fn) => run.check(title, fn);

const job = 'local-browser'; // metadata.name in testdata/local-job.yaml
const manifest = fileURLToPath(new URL('./testdata/local-job.yaml', import.meta.url));

let output = '';
// About 20 s of training: time to see Running replicas and several scrapes of the chief. The
// job's final accuracy is its evaluator's score of the final checkpoint (job_report::JobResult).
const launcher = spawn(
  args.taas,
  ['run', manifest, '--model-dir', path.join(tmp, 'model'), '--ui-port', '0', '--keep-ui', '--ui-assets', args.assets, '--progress-secs', '0', '--env', 'TF_MAX_STEPS=200', '--env', 'TAAS_LOG_STEPS=5', '--env', 'TF_SAVE_CHECKPOINTS_SECS=0', '--env', 'TAAS_SAVE_CHECKPOINTS_STEPS=50', '--env', 'TAAS_EVAL_INTERVAL_SECS=0.5', '--env', 'TAAS_WAIT_TIMEOUT_SECS=60'],
  { stdio: ['ignore', 'pipe', 'pipe'] },
);
launcher.stdout.on('data', (d) => (output += d));
launcher.stderr.on('data', (d) => (output += d));
const exited = new Promise((resolve) => launcher.on('exit', (code, signal) => resolve({ code, signal })));

let browser;
try {
  const url = await waitFor('the UI line', () => {
    if (launcher.exitCode !== null) throw new Error(`taas run exited:\n${output}`);
    return /^\[taas\] UI: (http:\/\/127\.0\.0\.1:\d+\/#token=\w+)$/m.exec(output)?.[1];
  }, 60000);
  run.log(`taas run serves ${url.replace(/#token=.*/, '#token=...')}`);

  browser = await launchChromium(args['web-ui']);
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(60000);
  const consoleErrors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`${m.text()} (${m.location().url})`);
  });
  const shot = (file) => page.screenshot({ path: path.join(args.artifacts, file), fullPage: true });

  await check('the printed URL signs in and lists the local job with its replicas', async () => {
    await page.goto(url);
    const row = page.locator(`tr[data-job=${job}]`);
    await waitText(row.locator('td.replicas'), 'PS 1/1 · Worker 1/1 · Evaluator 1/1');
    await waitText(row.getByTestId('state-chip'), 'Running');
    assert(!page.url().includes('token='), 'the token stays in the address bar');
    await waitText(page.getByTestId('local-run'), 'local run');
    await shot('local-jobs.png');
  });

  await check('the job detail shows the replica processes, their log and events', async () => {
    await page.getByRole('link', { name: job, exact: true }).click();
    await page.waitForURL(`**/jobs/default/${job}`);
    await waitFor('3 Running replicas', async () => (await page.locator('[data-testid=pods-table] tr[data-phase=Running]').count()) === 3, 60000);
    const nodes = await page.locator('[data-testid=pods-table] tbody tr td:nth-child(3)').allTextContents();
    assert(nodes.every((n) => n === 'localhost'), `nodes ${nodes}`);
    // Each replica's devices, as it reported them (read once it runs): the CPU here.
    let devices = [];
    await waitFor('the replicas\' devices', async () => {
      devices = await page.locator('[data-testid=pod-devices]').allTextContents();
      return devices.length === 3 && devices.every((d) => d === 'cpu');
    }, 30000).catch((e) => {
      throw new Error(`${e.message}: ${devices.join(' | ')}`);
    });
    await page.locator(`tr[data-pod=${job}-worker-0]`).getByRole('button', { name: 'Logs' }).click();
    await waitText(page.getByTestId('log-box'), 'step=', 60000);
    await waitText(page.getByTestId('events-table'), 'Started');
    await waitText(page.getByTestId('conditions'), 'Running');
  });

  await check('a 10 MiB line shows its end behind the cut marker, in the log API and the viewer', async () => {
    const base = url.replace(/\/#token=.*/, '');
    const token = url.replace(/.*#token=/, '');
    const logs = `${base}/api/v1/namespaces/default/tfjobs/${job}/pods/${job}-evaluator-0/logs`;
    let body = '';
    await waitFor('the evaluator\'s long line', async () => {
      body = await (await fetch(logs, { headers: { Authorization: `Bearer ${token}` } })).text();
      return body.includes('the end of the long line');
    }, 60000).catch((e) => {
      throw new Error(`${e.message}: ${body.slice(0, 200)}`);
    });
    assert(/^\[taas: \d+ bytes cut\] x+ the end of the long line\n/.test(body), body.slice(0, 200));
    await page.locator('select[name=replica]').selectOption(`${job}-evaluator-0`);
    const marker = page.getByTestId('log-cut');
    await waitFor('the cut marker in the viewer', async () => (await marker.count()) === 1, 30000);
    assert(/^\[taas: \d+ bytes cut\] $/.test(await marker.textContent()), await marker.textContent());
    await waitText(page.getByTestId('log-box'), 'the end of the long line');
    await page.locator('select[name=replica]').selectOption(`${job}-worker-0`);
  });

  await check('the loss chart gets points scraped from the chief', async () => {
    await waitFor('a global step', async () => Number((await page.getByTestId('stat-step').locator('strong').textContent()).replace(/,/g, '')) > 0, 60000);
    // The step against the chief's taas_max_steps (TF_MAX_STEPS=200): the progress in percent.
    await waitFor('the progress in percent', async () => /^\d+%$/.test(await page.getByTestId('stat-progress').locator('strong').textContent()), 60000);
    await waitText(page.getByTestId('stat-progress'), 'of 200');
    const loss = page.locator('figure.chart', { hasText: 'Loss' });
    await waitFor('loss samples', async () => (await loss.locator('.chart-empty').count()) === 0, 60000);
    const base = url.replace(/\/#token=.*/, '');
    const token = url.replace(/.*#token=/, '');
    await waitFor('two points with a loss', async () => {
      const r = await fetch(`${base}/api/v1/namespaces/default/tfjobs/${job}/metrics`, { headers: { Authorization: `Bearer ${token}` } });
      return (await r.json()).points.filter((p) => p.loss !== null).length >= 2;
    }, 60000);
    await sleep(2500); // one more poll of the page, so the screenshot has the chart's points
    await shot('local-job-detail.png');
    // The README's picture (docs/ui-job.png is a copy): the page's top as a browser window shows it.
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(args.artifacts, 'readme-job.png') });
  });

  await check('the cluster page shows this machine as the one node', async () => {
    await page.getByRole('link', { name: 'Cluster' }).click();
    await waitText(page.locator('main'), 'localhost');
    await waitText(page.getByTestId('gpus-in-use'), '/ 0');
    await shot('local-cluster.png');
  });

  await check('a local run offers no New job, Clone or Delete', async () => {
    await page.getByRole('link', { name: 'Jobs' }).click();
    const row = page.locator(`tr[data-job=${job}]`);
    await waitText(row.locator('td.replicas'), 'PS ');
    const absent = async (where, locator) => assert((await locator.count()) === 0, `${where}: ${await locator.count()} shown`);
    await absent('New job link', page.getByRole('link', { name: /New job|Create one/ }));
    await absent('Clone on the jobs page', page.getByTestId('clone'));
    await absent('Delete on the jobs page', page.getByTestId('delete'));
    await absent('any button in the job row', row.getByRole('button'));
    await page.getByRole('link', { name: job, exact: true }).click();
    await page.waitForURL(`**/jobs/default/${job}`);
    await waitText(page.getByTestId('stat-replicas'), 'PS ');
    // Every card holds its value: "PS 1/1 · Worker 1/1 · Evaluator 1/1" was cut at "Evalu".
    const overflowing = await page.locator('.stat strong').evaluateAll((els) =>
      els.filter((el) => el.scrollWidth > el.clientWidth + 1 || el.getBoundingClientRect().right > el.closest('.stat').getBoundingClientRect().right + 1).map((el) => el.textContent));
    assert(overflowing.length === 0, `values out of their cards: ${overflowing.join(' | ')}`);
    await absent('Clone on the job detail', page.getByTestId('clone'));
    await absent('Delete on the job detail', page.getByTestId('delete'));
    await absent('New job link on the job detail', page.getByRole('link', { name: 'New job' }));
  });

  await check('the New-job route explains why and shows the commands instead of a form', async () => {
    await page.goto(url.replace('/#token=', '/new#token='));
    const note = page.getByTestId('local-run-note');
    await waitText(note, 'cannot create');
    await waitText(note, 'taas run job.yaml');
    await waitText(note, 'kubectl apply -f job.yaml');
    assert((await page.getByTestId('job-form').count()) === 0, 'a form is shown');
    assert((await page.getByTestId('submit').count()) === 0, 'a submit button is shown');
    await shot('local-new-job.png');
  });

  await check('the job finishes, the UI keeps its final state, and Ctrl-C exits with its code', async () => {
    await waitFor('the job to finish', () => /\[taas\] the UI keeps serving/.test(output), 180000);
    await page.getByRole('link', { name: 'Jobs' }).click();
    const row = page.locator(`tr[data-job=${job}]`);
    await waitText(row.getByTestId('state-chip'), 'Succeeded');
    // The final accuracy of the chief's report, as the console's last line names it.
    const said = /\[taas\] job local-browser succeeded at step \d+: final .*?accuracy ([0-9.e-]+)/.exec(output);
    assert(said, `no final accuracy in the last line:\n${output.split('\n').slice(-5).join('\n')}`);
    const near = (text) => Math.abs(Number(text) - Number(said[1])) < 5e-4;
    await waitText(row.getByTestId('job-progress'), '100%');
    const listed = row.locator('[data-testid=job-accuracy][data-final=true]');
    await waitFor('the final accuracy in the job list', async () => (await listed.count()) === 1 && near(await listed.textContent()), 10000);
    await shot('local-jobs-succeeded.png');
    await page.getByRole('link', { name: job, exact: true }).click();
    const final = page.getByTestId('stat-final-accuracy').locator('strong');
    await waitFor('the final accuracy on the job page', async () => (await final.count()) === 1 && near(await final.textContent()), 10000);
    await waitText(page.getByTestId('stat-progress'), '100%');
    await shot('local-job-succeeded.png');
    launcher.kill('SIGINT');
    const { code } = await exited;
    assert(code === 0, `exit code ${code}`);
  });

  await check('no unexpected errors in the browser console', async () => {
    // The front end has no favicon. No 405 either: nothing offers a create, clone or delete.
    const unexpected = consoleErrors.filter((e) => !/favicon\.ico/.test(e));
    assert(unexpected.length === 0, unexpected.join('\n'));
  });
} catch (e) {
  run.fail('setup', e);
} finally {
  if (browser) await browser.close();
  if (launcher.exitCode === null) {
    launcher.kill('SIGINT');
    await Promise.race([exited, sleep(10000)]);
    if (launcher.exitCode === null) launcher.kill('SIGKILL');
  }
  if (run.failed) run.log(`--- taas run output (tail)\n${output.split('\n').slice(-60).join('\n')}`);
  fs.rmSync(tmp, { recursive: true, force: true });
}
run.finish();
