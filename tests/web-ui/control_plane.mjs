// A test control plane (scripts/cluster/taas-cluster) and the processes a browser test runs
// against it: commands run with the instance's KUBECONFIG and PATH, started processes log to
// files in `tmp`, and one `down` stops them all and the control plane.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { sleep, waitFor } from './harness.mjs';

export class ControlPlane {
  constructor(script, name, tmp) {
    this.script = script;
    this.name = name;
    this.tmp = tmp;
    this.env = { ...process.env };
    this.children = []; // anything with exitCode and kill()
  }

  // Runs a command to its end; its stdout, or an error with its stderr.
  run(cmd, argv, options = {}) {
    const p = spawnSync(cmd, argv, { env: this.env, encoding: 'utf8', ...options });
    if (p.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} failed (${p.status}): ${p.stderr}`);
    return p.stdout;
  }

  kubectl(...a) {
    return this.run('kubectl', a);
  }

  kubectlJson(...a) {
    return JSON.parse(this.kubectl(...a, '-o', 'json'));
  }

  // Starts the instance with `nodes` kwok nodes of `gpus` GPUs each and takes its environment.
  up(nodes, gpus) {
    this.run(this.script, ['up', '--name', this.name, '--nodes', String(nodes), '--gpus-per-node', String(gpus)], { stdio: ['ignore', 'inherit', 'inherit'] });
    for (const line of this.run(this.script, ['env', '--name', this.name]).split('\n')) {
      const m = /^export (\w+)=(.*)$/.exec(line.trim());
      if (m) this.env[m[1]] = m[2].replace(/^['"]|['"]$/g, '').replace('$PATH', process.env.PATH);
    }
  }

  // Applies the TFJob CRD and waits until it is served and the default service account exists.
  async installTfJobCrd(crd) {
    this.kubectl('apply', '-f', crd);
    this.kubectl('wait', '--for=condition=Established', '--timeout=120s', 'crd/tfjobs.kubeflow.org');
    await waitFor('the default service account', () => this.kubectlJson('-n', 'default', 'get', 'serviceaccount', 'default'));
  }

  // Starts a process that runs until `down`, its output in tmp/logName.
  start(cmd, argv, logName) {
    const out = fs.openSync(path.join(this.tmp, logName), 'w');
    const child = spawn(cmd, argv, { env: this.env, stdio: ['ignore', out, out] });
    this.children.push(child);
    return child;
  }

  // Starts taas-ui against the instance (`argv` after --kubeconfig; --listen on a free port) and
  // returns its base URL once it serves.
  async startUi(bin, argv) {
    const ui = this.start(bin, ['--kubeconfig', this.env.KUBECONFIG, '--listen', '127.0.0.1:0', ...argv], 'ui.log');
    return waitFor('taas-ui to serve', () => {
      const out = fs.readFileSync(path.join(this.tmp, 'ui.log'), 'utf8');
      if (ui.exitCode !== null) throw new Error(`taas-ui exited: ${out}`);
      return /serving (http:\/\/[\d.]+:\d+)\//.exec(out)?.[1];
    }, 30000);
  }

  // The last lines of the started processes' logs, for a failure's report.
  logTails(files, lines = 40) {
    return files
      .map((f) => path.join(this.tmp, f))
      .filter((p) => fs.existsSync(p))
      .map((p) => `--- ${path.basename(p)} (tail)\n${fs.readFileSync(p, 'utf8').split('\n').slice(-lines).join('\n')}`)
      .join('\n');
  }

  async down() {
    for (const c of this.children) if (c.exitCode === null) c.kill('SIGTERM');
    await sleep(500);
    spawnSync(this.script, ['down', '--name', this.name], { stdio: 'inherit' });
  }
}
