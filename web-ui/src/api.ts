// The front end's only door to the outside: the UI server's JSON API under /api/v1/.
import type { ErrorAnswer, FieldError } from './api_types';

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
  let body: Partial<ErrorAnswer> = {};
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
    body.errors ?? (body.field ? [{ field: body.field, message: body.error ?? '', formKey: body.formKey }] : []),
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

// ---- Types of the API's answers and requests: generated from the server's rows (api_types.ts) ----

export type * from './api_types';
