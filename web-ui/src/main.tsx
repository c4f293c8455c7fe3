import '@picocss/pico/css/pico.min.css';
import 'uplot/dist/uPlot.min.css';
import './style.css';

import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';

import { adoptTokenFromUrl, api, ConfigAnswer, setToken, setUnauthorizedListener, token } from './api';
import { ClusterPage } from './pages/Cluster';
import { JobDetailPage } from './pages/JobDetail';
import { JobsPage } from './pages/Jobs';
import { LocalRunNewJobPage, NewJobPage } from './pages/NewJob';
import { TopBar } from './components/TopBar';
import { usePath } from './util';

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

// The page of `path`: the job list unless the path names another.
function Page(props: { path: string; config: ConfigAnswer | undefined }) {
  const { path, config } = props;
  const detail = /^\/jobs\/([^/]+)\/([^/]+)\/?$/.exec(path);
  if (!config) return <p aria-busy="true">Connecting…</p>;
  if (path === '/new' || path.startsWith('/new/')) {
    return config.localRun ? <LocalRunNewJobPage /> : <NewJobPage config={config} />;
  }
  if (detail) return <JobDetailPage config={config} namespace={detail[1]} name={detail[2]} />;
  if (path === '/cluster') return <ClusterPage />;
  return <JobsPage config={config} />;
}

function App() {
  const path = usePath();
  const [config, setConfig] = useState<ConfigAnswer>();
  const [needToken, setNeedToken] = useState(false);
  const [generation, setGeneration] = useState(0);

  useEffect(() => {
    setUnauthorizedListener(() => setNeedToken(true));
    api<ConfigAnswer>('GET', 'config')
      .then((c) => {
        setConfig(c);
        setNeedToken(false);
      })
      .catch(() => {});
  }, [generation]);

  return (
    <>
      <TopBar
        path={path}
        config={config}
        signedIn={token() !== ''}
        onSignOut={() => {
          setToken('');
          setConfig(undefined);
          setNeedToken(true);
        }}
      />
      <main class="container-fluid">
        <Page path={path} config={config} />
      </main>
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
