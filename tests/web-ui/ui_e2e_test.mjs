// End-to-end test of the web UI against a real control plane (scripts/cluster/taas-cluster) with
// the TFJob CRD and the real operator: the API's security checks over HTTP, then a browser
// (Debian's Chromium driven by playwright-core) creates a job from the form, watches its pods go
// Running on simulated GPU nodes, sees the cluster page's GPU counts change, gets a validation
// error for an impossible request, and deletes the job. Screenshots of every screen go to
// --artifacts. Prints "N passed, N failed".
//
// Usage: node ui_e2e_test.mjs --ui BIN --operator BIN --crd FILE --cluster SCRIPT --assets DIR
//                             --web-ui DIR --artifacts DIR
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import { ControlPlane } from './control_plane.mjs';
import { assert, launchChromium, parseArgs, Run, sleep, waitFor, waitText } from './harness.mjs';

const args = parseArgs(process.argv, ['ui', 'operator', 'crd', 'cluster', 'assets', 'web-ui', 'artifacts']);

const name = `webui-${process.pid}-${randomBytes(2).toString('hex')}`;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'taas-webui-e2e-'));
fs.mkdirSync(args.artifacts, { recursive: true });
const cp = new ControlPlane(args.cluster, name, tmp);
const e2e = new Run('web-ui e2e');
const log = (...m) => e2e.log(...m);
const check = (title, fn) => e2e.check(title, fn);

const run = (cmd, argv, options) => cp.run(cmd, argv, options);
const kubectlJson = (...a) => cp.kubectlJson(...a);

let browser;
try {
  // ---- control plane, CRD, operator, UI server ----
  log(`starting control plane ${name}`);
  cp.up(2, 8);
  await cp.installTfJobCrd(args.crd);

  cp.start(args.operator, ['--kubeconfig', cp.env.KUBECONFIG, '--health-port', '0', '--health-address', '127.0.0.1', '--lease-namespace', 'default'], 'operator.log');

  // kwok's simulated pods run no trainer, so worker 0's Prometheus endpoint is played by this
  // server (the text a trainer exposes, improving at each scrape); taas-ui is pointed at it with
  // --metrics-target, the flag local runs use. The other workers, read for the job's rate, refuse
  // at once (no Service name to resolve from outside the cluster).
  let scrapes = 0;
  const trainer = http.createServer((req, res) => {
    scrapes += 1;
    const step = scrapes * 50;
    res.writeHead(req.url === '/metrics' ? 200 : 404, { 'Content-Type': 'text/plain; version=0.0.4' });
    res.end(
      `# TYPE taas_global_step counter\ntaas_global_step ${step}\n` +
        `taas_loss ${(2.3 * Math.exp(-step / 400) + 0.05 * Math.random()).toFixed(4)}\n` +
        `taas_examples_per_second ${(3000 + 200 * Math.random()).toFixed(1)}\n` +
        `taas_eval_accuracy ${(0.9 - 0.8 * Math.exp(-step / 300)).toFixed(4)}\n`,
    );
  });
  await new Promise((r) => trainer.listen(0, '127.0.0.1', r));
  const trainerAddress = `127.0.0.1:${trainer.address().port}`;
  cp.children.push({ exitCode: null, kill: () => trainer.close() });

  const token = randomBytes(24).toString('hex');
  const tokenFile = path.join(tmp, 'token');
  fs.writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  const base = await cp.startUi(args.ui, ['--namespaces', 'default,team-b', '--token-file', tokenFile, '--assets', args.assets, '--scrape-interval', '1', '--metrics-target', `default/ui-e2e-worker-0=${trainerAddress}`, '--metrics-target', 'default/ui-e2e-worker-1=127.0.0.1:1', '--metrics-target', 'default/ui-e2e-worker-2=127.0.0.1:1']);
  log(`taas-ui at ${base}`);

  const call = (method, p, { auth = token, body } = {}) =>
    fetch(`${base}/api/v1/${p}`, {
      method,
      headers: { ...(auth ? { Authorization: `Bearer ${auth}` } : {}), ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });

  // ---- the API over HTTP, against the real API server ----
  await check('API: no token is 401, a wrong token is 401', async () => {
    assert((await call('GET', 'tfjobs', { auth: '' })).status === 401, 'no token accepted');
    assert((await call('GET', 'tfjobs', { auth: 'wrong' })).status === 401, 'wrong token accepted');
    const ok = await call('GET', 'tfjobs');
    assert(ok.status === 200, `with token: ${ok.status}`);
  });
  await check('API: a namespace outside --namespaces is 403', async () => {
    const r = await call('GET', 'namespaces/kube-system/tfjobs');
    assert(r.status === 403, `got ${r.status}`);
    assert((await r.json()).field === 'metadata.namespace', 'field');
  });
  await check('API: an invalid field is 422 naming the field', async () => {
    const r = await call('POST', 'namespaces/default/tfjobs', { body: { name: 'x', image: 'i', workerReplicas: -1 } });
    assert(r.status === 422, `got ${r.status}`);
    const body = await r.json();
    assert(body.field === 'spec.tfReplicaSpecs.Worker.replicas', `field ${body.field}`);
  });
  await check('API: the API server\'s own errors come back with its code and message', async () => {
    // team-b is served by the UI but does not exist: the API server refuses the create.
    const r = await call('POST', 'namespaces/team-b/tfjobs', { body: { name: 'nope', image: 'taas/trainer:1', gpusPerWorker: 0 } });
    assert(r.status === 404, `got ${r.status}`);
    assert(/not found/.test((await r.json()).error), 'message');
  });
  await check('API: the cluster has 2 nodes with 8 GPUs each, none in use', async () => {
    const c = await (await call('GET', 'cluster')).json();
    assert(c.nodes.length === 2, `nodes ${c.nodes.length}`);
    assert(c.totals.allocatable.gpu === 16, `gpus ${c.totals.allocatable.gpu}`);
    assert(c.totals.inUse.gpu === 0, `in use ${c.totals.inUse.gpu}`);
  });

  // ---- the browser ----
  browser = await launchChromium(args['web-ui']);
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(60000);
  const consoleErrors = [];
  page.on('console', (m) => {
    // Simulated (kwok) nodes run no kubelet, so their pods have no logs to show.
    if (m.type() === 'error' && !m.location().url.includes('/logs')) consoleErrors.push(m.text());
  });
  const shot = (file) => page.screenshot({ path: path.join(args.artifacts, file), fullPage: true });
  const job = 'ui-e2e';

  await check('the token in the URL signs in and the jobs page loads', async () => {
    await page.goto(`${base}/#token=${token}`);
    await page.getByText('No jobs').waitFor();
    assert(!page.url().includes(token), 'the token stays in the address bar');
  });

  await check('all-reduce hides the parameter-server fields and previews a job without PS', async () => {
    await page.getByRole('link', { name: 'New job' }).first().click();
    await page.locator('input[name=name]').fill('allreduce-preview');
    const preview = page.getByTestId('yaml-preview');
    await waitFor('a preview with PS', async () => (await preview.textContent()).includes('PS:'), 30000);
    await page.locator('select[name=strategy]').selectOption('collective');
    await waitFor('a preview without PS', async () => {
      const y = await preview.textContent();
      return y.includes('name: allreduce-preview') && !y.includes('PS:') && !y.includes('TF_SYNC') && y.includes('Worker:');
    }, 30000);
    for (const hidden of ['input[name=psReplicas]', 'input[name=psCpu]', 'input[name=psMemory]', 'select[name=mode]']) {
      assert((await page.locator(hidden).count()) === 0, `${hidden} is still shown`);
    }
    await shot('new-job-allreduce.png');
    await page.locator('select[name=strategy]').selectOption('parameter_server');
    await waitFor('the PS fields again', async () => (await page.locator('input[name=psReplicas]').count()) === 1, 10000);
  });

  await check('a data claim previews as a read-only volume the API server accepts; a relative path is refused', async () => {
    await page.locator('input[name=dataClaim]').fill('fmnist-data');
    const preview = page.getByTestId('yaml-preview');
    await waitFor('a preview with the claim mounted', async () => {
      const y = await preview.textContent();
      return y.includes('claimName: fmnist-data') && y.includes('mountPath: /data') && y.includes('readOnly: true');
    }, 30000);
    await page.locator('input[name=dataMountPath]').fill('data');
    await waitText(page.locator('[data-field-error=dataMountPath]'), 'absolute path');
    await shot('new-job-data.png');
    await page.locator('input[name=dataClaim]').fill('');
    await waitFor('the mount path hidden again', async () => (await page.locator('input[name=dataMountPath]').count()) === 0, 10000);
  });

  await check('the new-job form previews the TFJob and creates it', async () => {
    await page.locator('input[name=name]').fill(job);
    await page.locator('input[name=psReplicas]').fill('1');
    await page.locator('input[name=workerReplicas]').fill('3');
    await page.locator('input[name=gpusPerWorker]').fill('2');
    await page.locator('select[name=restartPolicy]').selectOption('ExitCode');
    const preview = page.getByTestId('yaml-preview');
    await waitFor('the YAML preview', async () => {
      const y = await preview.textContent();
      return y.includes(`name: ${job}`) && y.includes('replicas: 3') && y.includes('nvidia.com/gpu: 2') && y.includes('restartPolicy: ExitCode');
    }, 30000);
    await waitText(page.getByTestId('capacity-hint'), '16 of 16 GPUs free');
    await shot('new-job.png');
    await page.getByTestId('submit').click();
    await page.waitForURL(`**/jobs/default/${job}`);
  });

  await check('the job detail shows its pods going Running on GPU nodes', async () => {
    await waitFor('4 Running pods', async () => (await page.locator('[data-testid=pods-table] tr[data-phase=Running]').count()) === 4, 180000);
    const nodes = await page.locator('[data-testid=pods-table] tbody tr td:nth-child(3)').allTextContents();
    assert(nodes.every((n) => /^taas-node-\d$/.test(n)), `nodes ${nodes}`);
    await waitText(page.getByTestId('stat-replicas'), 'PS 1/1 · Worker 3/3');
    await waitText(page.getByTestId('conditions'), 'Running');
  });

  await check('the job detail charts the metrics scraped from the chief', async () => {
    await waitFor('a global step', async () => Number((await page.getByTestId('stat-step').locator('strong').textContent()).replace(/,/g, '')) >= 250, 90000);
    // The step is the job's progress (its status, or the newest scrape) and the charts are the
    // scraped history, fetched on a poll of their own: within one poll every chart has samples.
    await waitFor('every chart with samples', async () => (await page.locator('.chart-empty').count()) === 0, 15000);
    await page.locator('select[name=x]').selectOption('time');
    await page.locator('select[name=x]').selectOption('step');
    await shot('job-detail.png');
    const m = await (await call('GET', `namespaces/default/tfjobs/${job}/metrics`)).json();
    assert(m.points.length >= 5 && m.latest.loss < 2.3 && m.latest.evalAccuracy > 0, `metrics ${JSON.stringify(m.latest)}`);
  });

  await check('the jobs list shows the job with replicas, GPUs and state', async () => {
    await page.getByRole('link', { name: 'Jobs' }).click();
    const row = page.locator(`tr[data-job=${job}]`);
    await waitText(row.locator('td.replicas'), 'PS 1/1 · Worker 3/3');
    assert((await row.locator('td.gpus').textContent()) === '6', 'GPUs requested');
    await waitText(row.getByTestId('state-chip'), 'Running');
    await shot('jobs.png');
    const again = await call('POST', 'namespaces/default/tfjobs', { body: { name: job, image: 'taas/trainer:1', gpusPerWorker: 0 } });
    assert(again.status === 409 && /already exists/.test((await again.json()).error), `second create: ${again.status}`);
  });

  await check('the cluster page counts the GPUs in use', async () => {
    await page.getByRole('link', { name: 'Cluster' }).click();
    await waitText(page.getByTestId('gpus-in-use'), '6 / 16');
    const used = await page.locator('.gpu-slots .slot.used').count();
    assert(used === 6, `filled slots ${used}`);
    await shot('cluster.png');
  });

  await check('a transient failure (exit 137) restarts the replica, and the job shows it', async () => {
    const before = kubectlJson('-n', 'default', 'get', 'pod', `${job}-worker-1`).metadata.uid;
    run(args.cluster, ['finish-pod', '--name', name, '--timeout', '120', 'default', `${job}-worker-1`, '137']);
    await page.getByRole('link', { name: 'Jobs' }).click();
    await page.getByRole('link', { name: job, exact: true }).click();
    await waitFor('the restart in the conditions or events', async () => /Restart/.test((await page.getByTestId('conditions').textContent()) + (await page.getByTestId('events-table').textContent())), 120000);
    await waitFor('worker-1 recreated and Running', () => {
      const p = kubectlJson('-n', 'default', 'get', 'pod', `${job}-worker-1`);
      return p.metadata.uid !== before && p.status.phase === 'Running' && !p.metadata.deletionTimestamp;
    }, 120000);
    await waitText(page.getByTestId('stat-restarts'), '1', 60000);
    await waitFor('4 Running pods again', async () => (await page.locator('[data-testid=pods-table] tr[data-phase=Running]').count()) === 4, 120000);
    await shot('job-detail-restarted.png');
  });

  await check('clone copies the job under a new name', async () => {
    await page.getByRole('link', { name: 'Jobs' }).click();
    await page.locator(`tr[data-job=${job}]`).getByTestId('clone').click();
    await page.locator('input[name=cloneName]').fill(`${job}-copy`);
    await page.getByTestId('confirm-dialog').getByRole('button', { name: 'Create copy' }).click();
    await page.waitForURL(`**/jobs/default/${job}-copy`);
    const copy = await (await call('GET', `namespaces/default/tfjobs/${job}-copy`)).json();
    const original = await (await call('GET', `namespaces/default/tfjobs/${job}`)).json();
    assert(JSON.stringify(copy.tfjob.spec.tfReplicaSpecs) === JSON.stringify(original.tfjob.spec.tfReplicaSpecs), 'the copy has another spec');
    assert(copy.tfjob.metadata.annotations['taas.dev/cloned-from'] === job, 'cloned-from annotation');
    assert((await call('DELETE', `namespaces/default/tfjobs/${job}-copy`)).status === 200, 'delete the copy');
  });

  await check('an impossible request gets a field-level error', async () => {
    await page.getByRole('link', { name: 'New job' }).first().click();
    await page.locator('input[name=name]').fill('too-big');
    await page.locator('input[name=gpusPerWorker]').fill('16');
    await page.locator('input[name=workerMemory]').fill('lots');
    const gpuError = page.locator('[data-field-error=gpusPerWorker]');
    await waitText(gpuError, 'largest node has 8');
    await waitText(page.locator('[data-field-error=workerMemory]'), 'not a Kubernetes quantity');
    await page.getByTestId('submit').click();
    await page.getByTestId('submit-error').waitFor();
    assert(page.url().endsWith('/new'), 'stayed on the form');
    await shot('new-job-errors.png');
    const list = await (await call('GET', 'tfjobs')).json();
    assert(!list.items.some((j) => j.name === 'too-big'), 'the impossible job was created');
  });

  await check('a job that does not fit waits, and the cluster page says why', async () => {
    const r = await call('POST', 'namespaces/default/tfjobs', {
      body: { name: 'waits', image: 'taas/trainer:1', psReplicas: 0, workerReplicas: 2, gpusPerWorker: 8 },
    });
    assert(r.status === 201, `create: ${r.status} ${await r.text()}`);
    await page.getByRole('link', { name: 'Cluster' }).click();
    await waitText(page.getByTestId('pending-table'), 'Insufficient nvidia.com/gpu', 120000);
    await shot('cluster-pending.png');
    // The jobs list says why, in the state chip's tooltip.
    await page.getByRole('link', { name: 'Jobs' }).click();
    const chip = page.locator('tr[data-job=waits]').getByTestId('state-chip');
    await waitFor('the reason in the tooltip', async () => /Unschedulable|Insufficient/.test(await chip.getAttribute('data-tooltip')), 60000);
    await chip.hover();
    await sleep(300);
    await shot('jobs-pending.png');
    assert((await call('DELETE', 'namespaces/default/tfjobs/waits')).status === 200, 'delete waits');
  });

  await check('a permanent failure (exit 1) fails the job, and the list says why', async () => {
    run(args.cluster, ['finish-pod', '--name', name, '--timeout', '120', 'default', `${job}-worker-1`, '1']);
    await page.getByRole('link', { name: 'Jobs' }).click();
    const chip = page.locator(`tr[data-job=${job}]`).getByTestId('state-chip');
    await waitText(chip, 'Failed', 120000);
    await waitFor('the exit code in the reason', async () => /exit 1\b/.test(await chip.getAttribute('data-tooltip')), 60000);
    await chip.hover();
    await sleep(300);
    await shot('jobs-failed.png');
  });

  await check('delete with confirmation removes the job and frees its GPUs', async () => {
    await page.getByRole('link', { name: 'Jobs' }).click();
    const row = page.locator(`tr[data-job=${job}]`);
    await row.getByTestId('delete').click();
    await page.getByTestId('confirm-dialog').getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
    await waitFor('the pods to go', () => kubectlJson('-n', 'default', 'get', 'pods').items.length === 0, 120000);
    await page.getByRole('link', { name: 'Cluster' }).click();
    await waitText(page.getByTestId('gpus-in-use'), '0 / 16', 120000);
  });

  await check('no errors in the browser console', async () => {
    const unexpected = consoleErrors.filter((e) => !/status of (401|404|422)/.test(e));
    assert(unexpected.length === 0, unexpected.join('\n'));
  });
} catch (e) {
  e2e.fail('setup', e);
  log(cp.logTails(['operator.log', 'ui.log']));
} finally {
  if (browser) await browser.close();
  await cp.down();
}
e2e.finish();
