// Pure logic of the front end (no DOM, no framework), unit-tested by tests/web-ui/logic_test.mjs.
import type { ConfigAnswer, FieldError, FormKey, GpuAccess, GpuCount, JobForm, MetricsPoint, ProgressRow } from './api';

// Whether the UI offers creating, cloning and deleting jobs: not when read-only, and not in a
// local run (`taas run` serves one job and answers those requests 405).
export function canChangeJobs(config: Pick<ConfigAnswer, 'readOnly'> & Partial<Pick<ConfigAnswer, 'localRun'>>): boolean {
  return !config.readOnly && !config.localRun;
}

// All-reduce among the workers: no parameter servers (and no mode: it is synchronous).
export function isAllReduce(form: Pick<JobForm, 'strategy'>): boolean {
  return form.strategy === 'collective';
}

// What the form sends: all of it, but with all-reduce neither the parameter-server fields nor the
// mode (all-reduce is synchronous), which its inputs hide, and without a data claim no mount path
// (its input is hidden too).
export function formBody(form: JobForm, command: string[], args: string[]): JobForm {
  const body: JobForm = { ...form, command, args };
  if (isAllReduce(form)) {
    delete body.psReplicas;
    delete body.psCpu;
    delete body.psMemory;
    delete body.mode;
  }
  if (!form.dataClaim) {
    delete body.dataClaim;
    delete body.dataMountPath;
  }
  return body;
}

// A PersistentVolumeClaim's name: a DNS-1123 subdomain (lower-case letters, digits, '-' and '.',
// starting and ending with a letter or digit, at most 253 characters).
const DNS_1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

// The data claim's inputs checked as they are typed, before the server's answer: the claim's name
// and the mount path's shape. The server checks both again (job_form.cc) and has the last word,
// with rules of its own (not over the job secret's mount); its errors replace these.
export function dataInputErrors(form: Pick<JobForm, 'dataClaim' | 'dataMountPath'>): Map<FormKey, string> {
  const errors = new Map<FormKey, string>();
  const claim = form.dataClaim ?? '';
  if (claim === '') return errors;
  if (claim.length > 253 || !DNS_1123_SUBDOMAIN.test(claim)) {
    errors.set('dataClaim', 'a claim name is lower-case letters, digits, - and . (a DNS-1123 subdomain)');
  }
  const path = form.dataMountPath ?? '';
  if (!path.startsWith('/')) {
    errors.set('dataMountPath', 'an absolute path, starting with /');
  } else if (path === '/' || /(^|\/)\.\.?(\/|$)/.test(path) || path.includes('//')) {
    errors.set('dataMountPath', 'a folder other than /, without . or .. segments');
  }
  return errors;
}

// Where the form shows each error: next to its input (the server names it: `formKey`), the first
// per input; the others in a list above the form, but not the message already shown as the
// request's own error.
export function placeErrors(
  errors: FieldError[],
  shownMessage: string,
): { byKey: Map<FormKey, string>; unplaced: FieldError[] } {
  const byKey = new Map<FormKey, string>();
  const unplaced: FieldError[] = [];
  for (const e of errors) {
    if (e.formKey) {
      if (!byKey.has(e.formKey)) byKey.set(e.formKey, e.message);
    } else if (e.message !== shownMessage) {
      unplaced.push(e);
    }
  }
  return { byKey, unplaced };
}

// The class of a node's GPU slot `index`: used, free, or beyond allocatable (reserved by the
// node); slots of a tainted or cordoned node say so too, since not every pod may take them.
export function slotClass(index: number, used: number, allocatable: number, access: GpuAccess | undefined): string {
  const state = index < used ? 'slot used' : index < allocatable ? 'slot' : 'slot reserved';
  return access === 'tainted' || access === 'cordoned' ? `${state} ${access}` : state;
}

// The cluster's GPUs that not every pod may take, in words ('' when there are none):
// "4 GPUs usable only by pods that tolerate the node's taints · 2 GPUs on cordoned nodes".
export function gpusApartText(slots: Partial<Record<GpuAccess, GpuCount>> | undefined): string {
  const parts: string[] = [];
  const gpus = (n: number) => `${n} GPU${n === 1 ? '' : 's'}`;
  const tainted = slots?.tainted?.allocatable ?? 0;
  const cordoned = slots?.cordoned?.allocatable ?? 0;
  if (tainted > 0) parts.push(`${gpus(tainted)} usable only by pods that tolerate the node's taints`);
  if (cordoned > 0) parts.push(`${gpus(cordoned)} on cordoned nodes (no new pods)`);
  return parts.join(' \u00b7 ');
}

// TensorBoard's smoothing: an exponential moving average, debiased at the start.
export function smooth(values: (number | null)[], weight: number): (number | null)[] {
  if (weight <= 0) return values;
  let last = 0;
  let count = 0;
  return values.map((v) => {
    if (v === null || !Number.isFinite(v)) return null;
    last = last * weight + (1 - weight) * v;
    count += 1;
    return last / (1 - Math.pow(weight, count));
  });
}

export function toCsv(points: MetricsPoint[]): string {
  const header = 'time,global_step,loss,examples_per_second,learning_rate,eval_accuracy';
  const cell = (v: number | null) => (v === null ? '' : String(v));
  return [
    header,
    ...points.map((p) =>
      [
        new Date(p.time).toISOString(),
        cell(p.step),
        cell(p.loss),
        cell(p.examplesPerSecond),
        cell(p.learningRate),
        cell(p.evalAccuracy),
      ].join(','),
    ),
  ].join('\n');
}

// A metric as a figure: 4 significant digits, whole thousands grouped; a dash while unknown.
export function formatMetric(v: number | null | undefined, digits = 4): string {
  if (v === null || v === undefined) return '–';
  return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString() : Number(v.toPrecision(digits)).toString();
}

// The job's accuracy as `kubectl get tfjobs` shows it (ACCURACY): the final one once training
// ended, else the latest evaluation's; null while neither is known.
export function jobAccuracy(progress: ProgressRow | null | undefined): { value: number; final: boolean } | null {
  const final = progress?.finalMetrics.find((m) => m.name === 'accuracy');
  if (final) return { value: final.value, final: true };
  const latest = progress?.accuracy;
  return latest === null || latest === undefined ? null : { value: latest, final: false };
}

// "42%", or '' while the job's progress (its step against its max steps) is unknown.
export function percentText(progress: ProgressRow | null | undefined): string {
  const percent = progress?.percent;
  return percent === null || percent === undefined ? '' : `${percent}%`;
}

export function formatAge(seconds: number): string {
  if (seconds < 60) return `${Math.floor(seconds)}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h${Math.floor((seconds % 3600) / 60)}m`;
  return `${Math.floor(seconds / 86400)}d${Math.floor((seconds % 86400) / 3600)}h`;
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value >= 100 || unit === 0 ? value.toFixed(0) : value.toFixed(1)} ${units[unit]}`;
}

export function formatCores(cores: number): string {
  return Number.isInteger(cores) ? `${cores}` : cores.toFixed(2);
}

export function formatTime(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}


// A replica's devices as the job page shows them: "cuda:0 NVIDIA H100 80GB HBM3, cuda:1 ..." or
// "cpu"; a dash while the replica has not reported them (not running yet, or not read yet) or
// reported none (an image without the metric).
export function devicesText(devices: string[] | null | undefined): string {
  return devices && devices.length > 0 ? devices.join(', ') : '–';
}

// The marker before the kept end of a cut log line, as the server writes it
// (web-ui/server/include/taas/ui_server/log_window.h, CutMarker): "[taas: 10485760 bytes cut] ".
export function cutMarker(bytes: number): string {
  return `[taas: ${bytes} bytes cut] `;
}
// Every marker in a text (a global pattern: reset lastIndex, or use it through split/matchAll).
export const cutMarkerPattern = /\[taas: \d+ bytes cut\] /g;
const leadingCutMarker = /^\[taas: (\d+) bytes cut\] /;

const utf8 = new TextEncoder();

// The log viewer's text once `chunk` arrived, within `max` characters, by the server's rule
// (log_window.h): whole lines, newest last; the oldest kept that does not fit whole shows its end
// behind the marker, which counts the UTF-8 bytes cut (adding to the count of a marker it already
// had), or goes when not even the marker fits. A cut never splits a surrogate pair.
export function appendLog(content: string, chunk: string, max: number): string {
  const text = content + chunk;
  if (text.length <= max) return text;
  let from = text.length - max;
  if (text[from - 1] === '\n') return text.slice(from);
  const lineStart = text.lastIndexOf('\n', from - 1) + 1;
  const newline = text.indexOf('\n', from);
  const lineEnd = newline < 0 ? text.length : newline;
  const had = leadingCutMarker.exec(text.slice(lineStart, lineStart + 64));
  const cutBefore = had ? Number(had[1]) : 0;
  const cutFrom = lineStart + (had ? had[0].length : 0);
  // Room for the longest marker this line can need: every unit of it cut, 3 UTF-8 bytes each.
  from += cutMarker(cutBefore + 3 * (lineEnd - cutFrom)).length;
  const code = text.charCodeAt(from);
  if (code >= 0xdc00 && code <= 0xdfff) from += 1; // the second half of a surrogate pair
  if (from >= lineEnd) return text.slice(Math.min(lineEnd + 1, text.length));
  return cutMarker(cutBefore + utf8.encode(text.slice(cutFrom, from)).length) + text.slice(from);
}

// The y range of a chart of values that cannot pass `cap` (an accuracy: 1): uPlot's own padding
// around the values, but never past the cap, nor under 0 on a linear axis.
export function cappedRange(min: number | null, max: number | null, cap: number): [number, number] {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [0, cap];
  const pad = max > min ? (max - min) * 0.1 : Math.max(Math.abs(max) * 0.05, 0.01);
  return [Math.max(0, Math.min(min - pad, cap)), Math.min(cap, max + pad)];
}
