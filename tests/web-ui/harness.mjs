// What the browser tests of the web UI share: arguments, polling, checks counted as passed or
// failed, and Debian's Chromium driven by playwright-core (from web-ui/node_modules, no browser
// download).
import { createRequire } from 'node:module';
import path from 'node:path';

// `--key value` pairs; exits with 2 when one of `required` is missing.
export function parseArgs(argv, required) {
  const args = {};
  for (let i = 2; i < argv.length; i += 2) args[argv[i].replace(/^--/, '')] = argv[i + 1];
  for (const key of required) {
    if (!args[key]) {
      console.error(`missing --${key}`);
      process.exit(2);
    }
  }
  return args;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function assert(cond, message) {
  if (!cond) throw new Error(message);
}

// A test run: `check` runs one named check and counts it; `finish` prints "N passed, N failed"
// and exits 0 only when something passed and nothing failed.
export class Run {
  constructor(name) {
    this.name = name;
    this.passed = 0;
    this.failed = 0;
  }

  log(...m) {
    console.log(`[${this.name} ${new Date().toISOString().slice(11, 19)}]`, ...m);
  }

  async check(title, fn) {
    try {
      await fn();
      this.passed += 1;
      this.log(`PASS ${title}`);
    } catch (e) {
      this.fail(title, e);
    }
  }

  fail(title, e) {
    this.failed += 1;
    this.log(`FAIL ${title}: ${e.stack ?? e}`);
  }

  finish() {
    console.log(`${this.passed} passed, ${this.failed} failed`);
    process.exit(this.failed === 0 && this.passed > 0 ? 0 : 1);
  }
}

// Polls `fn` until it returns something truthy (which is returned); throws after `timeoutMs`
// with the last error `fn` threw.
export async function waitFor(what, fn, timeoutMs = 120000, intervalMs = 500) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await sleep(intervalMs);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

// Waits until the element's text contains `text` (the element itself, not only a descendant).
export async function waitText(locator, text, timeoutMs = 60000) {
  await waitFor(`"${text}"`, async () => ((await locator.first().textContent({ timeout: 2000 })) ?? '').includes(text), timeoutMs);
}

// Headless Chromium (/usr/bin/chromium) through the playwright-core of `webUiDir`.
export async function launchChromium(webUiDir) {
  const { chromium } = createRequire(path.join(webUiDir, 'package.json'))('playwright-core');
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
