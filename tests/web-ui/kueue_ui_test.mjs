// The web UI follows the cluster as a scheduler sees it, on a real control plane
// (scripts/cluster/taas-cluster, 3 kwok nodes x 8 GPUs) with taas-ui and no operator: GPUs of a
// tainted and of a cordoned node counted apart; a replica the scheduler cannot place ("insufficient
// GPUs" from kube-scheduler's own message); and, once Kueue's CRDs are installed (only the CRDs,
// from the Kueue Go module in the module cache: no Kueue controller runs), the queues on the
// cluster page and "queued in LocalQueue" with the Workload's message on the job page, from
// ClusterQueue, LocalQueue and Workload objects whose status this test writes through the status
// subresource as Kueue would. The API over HTTP, then the two pages in Chromium (screenshots in
// --artifacts). Prints "N passed, N failed"; exits 77 (skipped) without a Go toolchain.
//
// Usage: node kueue_ui_test.mjs --ui BIN --crd FILE --cluster SCRIPT --assets DIR --web-ui DIR
//                               --artifacts DIR --kueue-module sigs.k8s.io/kueue@VERSION
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ControlPlane } from './control_plane.mjs';
import { assert, launchChromium, parseArgs, Run, waitFor, waitText } from './harness.mjs';

const args = parseArgs(process.argv, ['ui', 'crd', 'cluster', 'assets', 'web-ui', 'artifacts', 'kueue-module']);

const name = `webui-kueue-${process.pid}-${randomBytes(2).toString('hex')}`;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'taas-webui-kueue-'));
fs.mkdirSync(args.artifacts, { recursive: true });
const cp = new ControlPlane(args.cluster, name, tmp);
const t = new Run('web-ui kueue');
const log = (...m) => t.log(...m);
const check = (title, fn) => t.check(title, fn);

const run = (cmd, argv, options) => cp.run(cmd, argv, options);
const kubectl = (...a) => cp.kubectl(...a);
const kubectlJson = (...a) => cp.kubectlJson(...a);
// Creates an object from its JSON (kubectl reads it from stdin).
const create = (object) => JSON.parse(run('kubectl', ['create', '-o', 'json', '-f', '-'], { input: JSON.stringify(object) }));
// Writes `status` through the status subresource, as the controller that owns it would.
const setStatus = (resource, objectName, status, namespace) =>
  kubectl(...(namespace ? ['-n', namespace] : []), 'patch', resource, objectName, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status }));

// Kueue's CRDs, from its Go module (downloaded into the module cache once; no build).
if (spawnSync('go', ['version']).status !== 0) {
  console.log('no Go toolchain: cannot fetch the Kueue module for its CRDs; skipped');
  process.exit(77);
}
const kueueDir = JSON.parse(run('go', ['mod', 'download', '-json', args['kueue-module']], { cwd: tmp })).Dir;
const kueueCrds = ['clusterqueues', 'localqueues', 'workloads', 'resourceflavors'].map((r) =>
  path.join(kueueDir, 'config/components/crd/bases', `kueue.x-k8s.io_${r}.yaml`),
);

const kNoGpu = 'Insufficient nvidia.com/gpu';
const quotaMessage = "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor default-flavor, 4 more needed";

function tfjob(jobName, { labels = {}, suspend = false } = {}) {
  return {
    apiVersion: 'kubeflow.org/v1',
    kind: 'TFJob',
    metadata: { name: jobName, namespace: 'default', labels },
    spec: {
      runPolicy: { suspend },
      tfReplicaSpecs: {
        Worker: {
          replicas: 1,
          restartPolicy: 'Never',
          template: { spec: { containers: [{ name: 'tensorflow', image: 'taas/trainer:test', resources: { limits: { 'nvidia.com/gpu': 4 } } }] } },
        },
      },
    },
  };
}

let browser;
try {
  log(`starting control plane ${name}`);
  cp.up(3, 8);
  await cp.installTfJobCrd(args.crd);
  // taas-node-0 open, taas-node-1 tainted, taas-node-2 cordoned.
  kubectl('taint', 'nodes', 'taas-node-1', 'gpu=a100:NoSchedule');
  kubectl('cordon', 'taas-node-2');

  const token = randomBytes(24).toString('hex');
  const tokenFile = path.join(tmp, 'token');
  fs.writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  const base = await cp.startUi(args.ui, ['--namespaces', 'default', '--token-file', tokenFile, '--assets', args.assets, '--cluster-max-age', '0.5']);
  log(`taas-ui at ${base}`);
  const get = async (p) => {
    const r = await fetch(`${base}/api/v1/${p}`, { headers: { Authorization: `Bearer ${token}` } });
    if (r.status !== 200) throw new Error(`GET ${p}: ${r.status} ${await r.text()}`);
    return r.json();
  };

  await check('API: GPUs of the tainted and the cordoned node are counted apart; no Kueue, no queues', async () => {
    const cluster = await waitFor('the taint and the cordon in the cluster view', async () => {
      const c = await get('cluster');
      return c.totals.gpuSlots.tainted.allocatable === 8 && c.totals.gpuSlots.cordoned.allocatable === 8 ? c : null;
    }, 60000);
    assert(cluster.totals.gpuSlots.open.allocatable === 8, `open ${JSON.stringify(cluster.totals.gpuSlots)}`);
    assert(cluster.totals.allocatable.gpu === 24, 'all GPUs still in the total');
    const node = (n) => cluster.nodes.find((x) => x.name === n);
    assert(node('taas-node-0').gpuAccess === 'open', 'node 0 open');
    assert(node('taas-node-1').gpuAccess === 'tainted', 'node 1 tainted');
    assert(node('taas-node-1').gpuNote === 'usable only by pods that tolerate gpu=a100:NoSchedule', node('taas-node-1').gpuNote);
    assert(node('taas-node-2').gpuAccess === 'cordoned' && node('taas-node-2').gpuNote === 'cordoned: no new pods', 'node 2 cordoned');
    assert(node('taas-node-2').taints.length === 0 || node('taas-node-2').taints.every((x) => x.startsWith('node.kubernetes.io/unschedulable')), `${node('taas-node-2').taints}`);
    assert(cluster.queues === null, `queues without Kueue: ${JSON.stringify(cluster.queues)}`);
  });

  await check("API: a replica the scheduler cannot place waits for 'insufficient GPUs'", async () => {
    create(tfjob('big'));
    // No operator runs here: the replica's pod is made as the operator would label it.
    create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'big-worker-0',
        namespace: 'default',
        labels: { 'training.kubeflow.org/job-name': 'big', 'training.kubeflow.org/replica-type': 'worker', 'training.kubeflow.org/replica-index': '0' },
      },
      spec: { containers: [{ name: 'tensorflow', image: 'taas/trainer:test', resources: { limits: { 'nvidia.com/gpu': 16 } } }] },
    });
    const detail = await waitFor('the scheduler to give up on big-worker-0', async () => {
      const d = await get('namespaces/default/tfjobs/big');
      return d.waiting ? d : null;
    }, 90000);
    assert(detail.waiting.reason === 'insufficientGpus', JSON.stringify(detail.waiting));
    assert(detail.waiting.message === 'insufficient GPUs', detail.waiting.message);
    assert(detail.waiting.detail.includes(kNoGpu), detail.waiting.detail);
  });

  let queued;
  await check('Kueue CRDs installed: ClusterQueue, LocalQueue and a Workload with status', async () => {
    for (const crd of kueueCrds) kubectl('apply', '--server-side', '-f', crd);
    for (const r of ['clusterqueues', 'localqueues', 'workloads', 'resourceflavors']) {
      kubectl('wait', '--for=condition=Established', '--timeout=120s', `crd/${r}.kueue.x-k8s.io`);
    }
    await waitFor('the kueue.x-k8s.io/v1beta1 API to be served', () => kubectlJson('get', 'clusterqueues.v1beta1.kueue.x-k8s.io'), 60000);
    const flavor = 'default-flavor';
    create({ apiVersion: 'kueue.x-k8s.io/v1beta1', kind: 'ResourceFlavor', metadata: { name: flavor } });
    create({
      apiVersion: 'kueue.x-k8s.io/v1beta1',
      kind: 'ClusterQueue',
      metadata: { name: 'team-a-cq' },
      spec: { namespaceSelector: {}, resourceGroups: [{ coveredResources: ['nvidia.com/gpu'], flavors: [{ name: flavor, resources: [{ name: 'nvidia.com/gpu', nominalQuota: 8 }] }] }] },
    });
    const usage = [{ name: flavor, resources: [{ name: 'nvidia.com/gpu', total: '8', borrowed: '0' }] }];
    setStatus('clusterqueues.v1beta1.kueue.x-k8s.io', 'team-a-cq', { pendingWorkloads: 1, reservingWorkloads: 2, admittedWorkloads: 2, flavorsReservation: usage, flavorsUsage: usage });
    create({ apiVersion: 'kueue.x-k8s.io/v1beta1', kind: 'LocalQueue', metadata: { name: 'team-a', namespace: 'default' }, spec: { clusterQueue: 'team-a-cq' } });
    setStatus('localqueues.v1beta1.kueue.x-k8s.io', 'team-a', { pendingWorkloads: 1, reservingWorkloads: 2, admittedWorkloads: 2 }, 'default');

    queued = create(tfjob('queued', { labels: { 'kueue.x-k8s.io/queue-name': 'team-a' }, suspend: true }));
    const owner = { apiVersion: 'kubeflow.org/v1', kind: 'TFJob', name: 'queued', uid: queued.metadata.uid, controller: true };
    create({
      apiVersion: 'kueue.x-k8s.io/v1beta1',
      kind: 'Workload',
      metadata: { name: 'tfjob-queued-1a2b3', namespace: 'default', ownerReferences: [owner], labels: { 'kueue.x-k8s.io/job-uid': queued.metadata.uid } },
      spec: {
        queueName: 'team-a',
        podSets: [{ name: 'worker', count: 1, template: queued.spec.tfReplicaSpecs.Worker.template }],
      },
    });
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    setStatus('workloads.v1beta1.kueue.x-k8s.io', 'tfjob-queued-1a2b3', {
      conditions: [{ type: 'QuotaReserved', status: 'False', reason: 'Pending', message: quotaMessage, lastTransitionTime: now }],
    }, 'default');
  });

  await check('API: the cluster page shows the ClusterQueue with its GPU quota, use and LocalQueue', async () => {
    const cluster = await waitFor('the queues', async () => {
      const c = await get('cluster');
      return c.queues?.clusterQueues?.length ? c : null;
    }, 30000);
    const q = cluster.queues.clusterQueues[0];
    assert(q.name === 'team-a-cq', q.name);
    assert(q.gpuQuota === 8 && q.gpuInUse === 8 && q.gpuReserved === 8, JSON.stringify(q));
    assert(q.pendingWorkloads === 1 && q.admittedWorkloads === 2 && q.reservingWorkloads === 2, JSON.stringify(q));
    assert(JSON.stringify(q.localQueues) === '["default/team-a"]', JSON.stringify(q.localQueues));
    assert(cluster.queues.error === '', cluster.queues.error);
  });

  await check("API: the suspended job labelled with a LocalQueue is 'queued' with the Workload's message", async () => {
    const detail = await get('namespaces/default/tfjobs/queued');
    assert(detail.waiting?.reason === 'queued', JSON.stringify(detail.waiting));
    assert(detail.waiting.message === 'queued in LocalQueue team-a (Kueue)', detail.waiting.message);
    assert(detail.waiting.detail === quotaMessage, detail.waiting.detail);
  });

  browser = await launchChromium(args['web-ui']);
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const consoleErrors = [];
  page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
  const shot = (file) => page.screenshot({ path: path.join(args.artifacts, file), fullPage: true });
  await page.goto(`${base}/#token=${token}`);

  await check('page: the cluster shows the GPUs set apart, each node why, and the queue', async () => {
    await page.getByRole('link', { name: 'Cluster' }).click();
    await waitText(page.getByTestId('gpus-apart'), "8 GPUs usable only by pods that tolerate the node's taints");
    await waitText(page.getByTestId('gpus-apart'), '8 GPUs on cordoned nodes');
    const tainted = page.locator('article[data-node=taas-node-1]');
    await waitText(tainted.getByTestId('gpu-note'), 'usable only by pods that tolerate gpu=a100:NoSchedule');
    assert((await tainted.getByTestId('gpu-slots').getAttribute('data-access')) === 'tainted', 'tainted slots');
    assert((await page.locator('article[data-node=taas-node-2]').getByTestId('gpu-slots').getAttribute('data-access')) === 'cordoned', 'cordoned slots');
    const row = page.getByTestId('queues-table').locator('tr[data-queue=team-a-cq]');
    await waitText(row.getByTestId('queue-gpus'), '8 / 8');
    await waitText(row.getByTestId('queue-pending'), '1');
    await waitText(row, 'default/team-a');
    await shot('cluster-kueue.png');
  });

  await check("page: the job page says why each job waits", async () => {
    await page.goto(`${base}/jobs/default/queued`);
    await waitText(page.getByTestId('job-waiting'), 'Waiting: queued in LocalQueue team-a (Kueue)');
    await waitText(page.getByTestId('job-waiting'), '4 more needed');
    await shot('job-queued.png');
    await page.goto(`${base}/jobs/default/big`);
    await waitText(page.getByTestId('job-waiting'), 'Waiting: insufficient GPUs');
    await waitText(page.getByTestId('job-waiting'), kNoGpu);
    await shot('job-insufficient-gpus.png');
  });

  await check('no errors in the browser console', async () => {
    // A job never scraped has no metrics yet (404), as in web_ui_e2e.
    const unexpected = consoleErrors.filter((e) => !/status of 404/.test(e));
    assert(unexpected.length === 0, unexpected.join('\n'));
  });
} catch (e) {
  t.fail('setup', e);
  log(cp.logTails(['ui.log']));
} finally {
  if (browser) await browser.close();
  await cp.down();
}
t.finish();
