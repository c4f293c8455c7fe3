// The front end's only door to the outside: the UI server's JSON API under /api/v1/.

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly field: string | undefined,
    readonly errors: FieldError[],
  ) {
    super(message);
  }
}

const TOKEN_KEY = 'taas-token';

// A token handed over in the URL fragment (`/#token=...`, as `taas-ui` prints it) is kept in
// this browser and removed from the address bar.
export function adoptTokenFromUrl(): void {
  const match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (match) {
    localStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
    history.replaceState(null, '', window.location.pathname + window.location.search);
  }
}

export function token(): string {
  return localStorage.getItem(TOKEN_KEY) ?? '';
}

export function setToken(value: string): void {
  if (value) localStorage.setItem(TOKEN_KEY, value);
  else localStorage.removeItem(TOKEN_KEY);
}

function headers(json: boolean): HeadersInit {
  const h: Record<string, string> = {};
  const t = token();
  if (t) h['Authorization'] = `Bearer ${t}`;
  if (json) h['Content-Type'] = 'application/json';
  return h;
}

type UnauthorizedListener = () => void;
let onUnauthorized: UnauthorizedListener = () => {};
export function setUnauthorizedListener(listener: UnauthorizedListener): void {
  onUnauthorized = listener;
}

async function toError(response: Response): Promise<ApiError> {
  let body: { error?: string; field?: string; errors?: FieldError[] } = {};
  try {
    body = await response.json();
  } catch {
    /* not JSON */
  }
  if (response.status === 401) onUnauthorized();
  return new ApiError(
    response.status,
    body.error ?? `${response.status} ${response.statusText}`,
    body.field,
    body.errors ?? (body.field ? [{ field: body.field, message: body.error ?? '' }] : []),
  );
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`/api/v1/${path}`, {
    method,
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw await toError(response);
  return (await response.json()) as T;
}

export async function text(path: string): Promise<string> {
  const response = await fetch(`/api/v1/${path}`, { headers: headers(false) });
  if (!response.ok) throw await toError(response);
  return response.text();
}

// Follows a chunked text stream (pod logs) until it ends or `signal` aborts it.
export async function follow(
  path: string,
  onChunk: (chunk: string) => void,
  signal: AbortSignal,
): Promise<void> {
  const response = await fetch(`/api/v1/${path}`, { headers: headers(false), signal });
  if (!response.ok || !response.body) throw await toError(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    onChunk(decoder.decode(value, { stream: true }));
  }
}

// ---- Types of the API's answers (see docs/web-ui.md) ----

export interface Config {
  namespaces: string[];
  readOnly: boolean;
  localRun?: boolean;
  version: string;
}

export interface ReplicaCount {
  type: string;
  ready: number;
  desired: number;
}

export interface PodRow {
  name: string;
  replicaType: string;
  index: number;
  node: string;
  phase: string;
  reason: string;
  message: string;
  ready: boolean;
  restarts: number;
  exitCode: number | null;
  gpus: number;
  startTime: string;
  // The devices its model replicas run on, as the replica reported them ("cuda:0 NVIDIA H100
  // 80GB HBM3", "cpu"); null or absent while unknown (job detail only).
  devices?: string[] | null;
}

export interface JobRow {
  namespace: string;
  name: string;
  created: string;
  ageSeconds: number;
  state: string;
  reason: string;
  severity: 'ok' | 'warning' | 'error';
  replicas: ReplicaCount[];
  replicasText: string;
  restarts: number;
  gpus: number;
  pods?: PodRow[];
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastUpdateTime?: string;
}

export interface EventRow {
  type: string;
  reason: string;
  message: string;
  object: string;
  count: number;
  time: string;
}

// Why a job waits, from what Kubernetes says (docs/web-ui.md).
export interface Waiting {
  reason: 'queued' | 'suspended' | 'gangIncomplete' | 'insufficientGpus' | 'unschedulable';
  message: string;
  detail: string;
}

export interface JobDetail {
  job: JobRow & { pods: PodRow[] };
  tfjob: Record<string, unknown>;
  conditions: Condition[];
  events: EventRow[];
  waiting?: Waiting | null;
}

export interface MetricsPoint {
  time: number;
  step: number | null;
  loss: number | null;
  examplesPerSecond: number | null;
  learningRate: number | null;
  evalAccuracy: number | null;
}

export interface Metrics {
  points: MetricsPoint[];
  latest: MetricsPoint | null;
}

export interface Resources {
  cpu: number;
  memory: number;
  gpu: number;
}

// Who may be placed on a node's GPUs: any pod, only pods that tolerate its taints, or none.
export type GpuAccess = 'open' | 'tainted' | 'cordoned';

export interface NodeRow {
  name: string;
  ready: boolean;
  unschedulable: boolean;
  taints: string[];
  gpuAccess: GpuAccess;
  gpuNote: string;
  capacity: Resources;
  allocatable: Resources;
  inUse: Resources;
  pods: number;
}

export interface PendingRow {
  namespace: string;
  job: string;
  pod: string;
  gpus: number;
  reason: string;
  message: string;
}

export interface GpuCount {
  allocatable: number;
  inUse: number;
}

export interface ClusterQueueRow {
  name: string;
  gpuQuota: number;
  gpuReserved: number;
  gpuInUse: number;
  pendingWorkloads: number;
  reservingWorkloads: number;
  admittedWorkloads: number;
  localQueues: string[];
}

export interface LocalQueueRow {
  namespace: string;
  name: string;
  clusterQueue: string;
  pendingWorkloads: number;
  admittedWorkloads: number;
}

// Kueue's queues; null when Kueue is not installed.
export interface Queues {
  clusterQueues: ClusterQueueRow[];
  localQueues: LocalQueueRow[];
  error: string;
}

export interface Cluster {
  totals: {
    capacity: Resources;
    allocatable: Resources;
    inUse: Resources;
    nodes: number;
    gpuSlots: Record<GpuAccess, GpuCount>;
  };
  nodes: NodeRow[];
  pending: PendingRow[];
  queues: Queues | null;
}

export interface JobForm {
  name: string;
  image: string;
  command: string[];
  args: string[];
  // Parameter servers, or all-reduce among the workers (no PS replicas; TF_CONFIG without ps).
  strategy: 'parameter_server' | 'collective';
  psReplicas: number;
  workerReplicas: number;
  gpusPerWorker: number;
  chief: boolean;
  evaluator: boolean;
  psCpu: string;
  psMemory: string;
  workerCpu: string;
  workerMemory: string;
  mode: 'sync' | 'async';
  restartPolicy: string;
  backoffLimit: number;
}

export interface DryRun {
  tfjob: Record<string, unknown> | null;
  errors: FieldError[];
}
