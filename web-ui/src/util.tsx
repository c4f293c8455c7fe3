import { useEffect, useRef, useState } from 'preact/hooks';

export { formatAge, formatBytes, formatCores, formatTime } from './logic';

// Calls `load` now and every `intervalMs` while the component is mounted; `deps` restart it.
export function usePoll<T>(
  load: () => Promise<T>,
  intervalMs: number,
  deps: unknown[],
): { data: T | undefined; error: Error | undefined; reload: () => void } {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<Error>();
  const tick = useRef(0);
  const [nonce, setNonce] = useState(0);
  useEffect(() => {
    let alive = true;
    let timer: number | undefined;
    const run = async () => {
      const mine = ++tick.current;
      try {
        const value = await load();
        if (alive && mine === tick.current) {
          setData(value);
          setError(undefined);
        }
      } catch (e) {
        if (alive) setError(e as Error);
      }
      if (alive) timer = window.setTimeout(run, intervalMs);
    };
    run();
    return () => {
      alive = false;
      if (timer !== undefined) window.clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, nonce]);
  return { data, error, reload: () => setNonce((n) => n + 1) };
}

// Minimal client-side routing on the History API (the server answers every app path with
// index.html).
export function navigate(path: string): void {
  history.pushState(null, '', path);
  window.dispatchEvent(new PopStateEvent('popstate'));
}

export function usePath(): string {
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const onPop = () => setPath(window.location.pathname);
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
  }, []);
  return path;
}

export function Link(props: { href: string; children: preact.ComponentChildren; class?: string }) {
  return (
    <a
      href={props.href}
      class={props.class}
      onClick={(e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(props.href);
      }}
    >
      {props.children}
    </a>
  );
}
