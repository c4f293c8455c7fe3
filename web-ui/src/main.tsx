import '@picocss/pico/css/pico.min.css';
import 'uplot/dist/uPlot.min.css';
import './style.css';

import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';

import { adoptTokenFromUrl, api, Config, setToken, setUnauthorizedListener, token } from './api';
import { ClusterPage } from './pages/Cluster';
import { JobDetailPage } from './pages/JobDetail';
import { JobsPage } from './pages/Jobs';
import { LocalRunNewJobPage, NewJobPage } from './pages/NewJob';
import { Link, usePath } from './util';

function TokenDialog(props: { onSaved: () => void }) {
  const [value, setValue] = useState('');
  return (
    <dialog open>
      <article>
        <header>
          <h3>Sign in</h3>
        </header>
        <p>
          This taas UI needs its access token. Ask your administrator, or open the URL that
          <code>taas-ui</code> printed.
        </p>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            setToken(value.trim());
            props.onSaved();
          }}
        >
          <input
            type="password"
            name="token"
            placeholder="Bearer token"
            autocomplete="off"
            value={value}
            onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          />
          <button type="submit">Use token</button>
        </form>
      </article>
    </dialog>
  );
}

function App() {
  const path = usePath();
  const [config, setConfig] = useState<Config>();
  const [needToken, setNeedToken] = useState(false);
  const [generation, setGeneration] = useState(0);

  useEffect(() => {
    setUnauthorizedListener(() => setNeedToken(true));
    api<Config>('GET', 'config')
      .then((c) => {
        setConfig(c);
        setNeedToken(false);
      })
      .catch(() => {});
  }, [generation]);

  let page;
  const detail = /^\/jobs\/([^/]+)\/([^/]+)\/?$/.exec(path);
  if (!config) {
    page = <p aria-busy="true">Connecting…</p>;
  } else if (path === '/new' || path.startsWith('/new/')) {
    page = config.localRun ? <LocalRunNewJobPage /> : <NewJobPage config={config} />;
  } else if (detail) {
    page = <JobDetailPage config={config} namespace={detail[1]} name={detail[2]} />;
  } else if (path === '/cluster') {
    page = <ClusterPage />;
  } else {
    page = <JobsPage config={config} />;
  }
  const nav = (href: string, label: string, active: boolean) => (
    <li>
      <Link href={href} class={active ? 'active' : ''}>
        {label}
      </Link>
    </li>
  );
  return (
    <>
      <header class="container-fluid topbar">
        <nav>
          <ul>
            <li>
              <strong class="brand">taas</strong>
            </li>
            {nav('/', 'Jobs', path === '/' || (path.startsWith('/jobs') && !detail))}
            {config && !config.localRun && nav('/new', 'New job', path.startsWith('/new'))}
            {nav('/cluster', 'Cluster', path === '/cluster')}
          </ul>
          <ul>
            {config?.localRun && (
              <li>
                <small class="muted" data-testid="local-run" data-tooltip="served by taas run for its own job" data-placement="left">
                  local run
                </small>
              </li>
            )}
            {config?.readOnly && (
              <li>
                <small class="muted">read-only</small>
              </li>
            )}
            {token() && (
              <li>
                <a
                  href="#"
                  class="secondary"
                  onClick={(e) => {
                    e.preventDefault();
                    setToken('');
                    setConfig(undefined);
                    setNeedToken(true);
                  }}
                >
                  Sign out
                </a>
              </li>
            )}
          </ul>
        </nav>
      </header>
      <main class="container-fluid">{page}</main>
      {needToken && (
        <TokenDialog
          onSaved={() => {
            setNeedToken(false);
            setGeneration((g) => g + 1);
          }}
        />
      )}
    </>
  );
}

adoptTokenFromUrl();
render(<App />, document.getElementById('app')!);
