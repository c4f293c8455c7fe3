import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

import { follow, ReplicaRow, text } from '../api';
import { appendLog, cutMarkerPattern } from '../logic';

// The viewer's window: the server cuts an answer to it (limitBytes), and the viewer a followed
// stream, by the same rule (logic.ts appendLog).
const MAX_CHARS = 2_000_000;

// The text with each cut marker shown apart.
function withMarkers(content: string) {
  const parts: ComponentChildren[] = [];
  let at = 0;
  for (const m of content.matchAll(cutMarkerPattern)) {
    parts.push(content.slice(at, m.index ?? 0), <mark class="log-cut" data-testid="log-cut">{m[0]}</mark>);
    at = (m.index ?? 0) + m[0].length;
  }
  parts.push(content.slice(at));
  return parts;
}

// Streams the logs of one replica; follows new lines while "Follow" is on.
export function LogViewer(props: { namespace: string; job: string; pods: ReplicaRow[]; selected?: string; onSelect: (pod: string) => void }) {
  const pod = props.selected ?? props.pods[0]?.name;
  const [content, setContent] = useState('');
  const [following, setFollowing] = useState(true);
  const [status, setStatus] = useState('');
  const box = useRef<HTMLPreElement>(null);
  const stick = useRef(true);

  useEffect(() => {
    if (!pod) return;
    setContent('');
    setStatus('loading');
    const path = `namespaces/${encodeURIComponent(props.namespace)}/tfjobs/${encodeURIComponent(props.job)}/pods/${encodeURIComponent(pod)}/logs?tailLines=2000`;
    const abort = new AbortController();
    const append = (chunk: string) => setContent((c) => appendLog(c, chunk, MAX_CHARS));
    (async () => {
      try {
        if (following) {
          setStatus('following');
          await follow(`${path}&follow=true`, append, abort.signal);
          setStatus('stream ended');
        } else {
          append(await text(`${path}&limitBytes=${MAX_CHARS}`));
          setStatus('');
        }
      } catch (e) {
        if (!abort.signal.aborted) setStatus(`no logs: ${(e as Error).message}`);
      }
    })();
    return () => abort.abort();
  }, [props.namespace, props.job, pod, following]);

  useEffect(() => {
    if (box.current && stick.current) box.current.scrollTop = box.current.scrollHeight;
  }, [content]);

  if (props.pods.length === 0) return <p class="muted">No replicas yet.</p>;
  return (
    <div class="logs">
      <div class="log-controls" role="group">
        <select
          name="replica"
          aria-label="Replica"
          value={pod}
          onChange={(e) => props.onSelect((e.target as HTMLSelectElement).value)}
        >
          {props.pods.map((p) => (
            <option value={p.name}>
              {p.replicaType}-{p.index} ({p.phase})
            </option>
          ))}
        </select>
        <label class="inline">
          <input type="checkbox" role="switch" checked={following} onChange={(e) => setFollowing((e.target as HTMLInputElement).checked)} />
          Follow
        </label>
        <small class="muted">{status}</small>
      </div>
      <pre
        class="log-box"
        ref={box}
        data-testid="log-box"
        onScroll={(e) => {
          const el = e.target as HTMLPreElement;
          stick.current = el.scrollTop + el.clientHeight >= el.scrollHeight - 20;
        }}
      >
        {content ? withMarkers(content) : ' '}
      </pre>
    </div>
  );
}
