// The bar above every page: the pages (no New job in a local run), whether this UI is a local
// run's or read-only, and signing out.
import type { ConfigAnswer } from '../api';
import { Link } from '../util';

function NavLink(props: { href: string; label: string; active: boolean }) {
  return (
    <li>
      <Link href={props.href} class={props.active ? 'active' : ''}>
        {props.label}
      </Link>
    </li>
  );
}

export function TopBar(props: {
  path: string;
  config: ConfigAnswer | undefined;
  signedIn: boolean;
  onSignOut: () => void;
}) {
  const { path, config } = props;
  const onJobPage = /^\/jobs\/[^/]+\/[^/]+\/?$/.test(path);
  return (
    <header class="container-fluid topbar">
      <nav>
        <ul>
          <li>
            <strong class="brand">taas</strong>
          </li>
          <NavLink href="/" label="Jobs" active={path === '/' || (path.startsWith('/jobs') && !onJobPage)} />
          {config && !config.localRun && <NavLink href="/new" label="New job" active={path.startsWith('/new')} />}
          <NavLink href="/cluster" label="Cluster" active={path === '/cluster'} />
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
          {props.signedIn && (
            <li>
              <a
                href="#"
                class="secondary"
                onClick={(e) => {
                  e.preventDefault();
                  props.onSignOut();
                }}
              >
                Sign out
              </a>
            </li>
          )}
        </ul>
      </nav>
    </header>
  );
}
