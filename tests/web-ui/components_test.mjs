// Unit tests of the front end's components (web-ui/src/**/*.test.tsx, beside each component),
// run with `node --test` from web-ui/ (ctest: web_ui_unit). Each test file is bundled with the
// esbuild that Vite ships (with its Preact and preact-render-to-string: one Preact for the
// component and its test) into a scratch folder and imported, so its tests register with node's
// runner; failures point at the .tsx lines through the bundles' source maps.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const webUi = process.cwd();
const esbuild = createRequire(path.join(webUi, 'package.json'))('esbuild');
const src = path.join(webUi, 'src');
const files = fs
  .readdirSync(src, { recursive: true })
  .filter((file) => file.endsWith('.test.tsx'))
  .sort();
if (files.length === 0) throw new Error(`no component tests (*.test.tsx) under ${src}`);
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'taas-web-ui-tests-'));
process.on('exit', () => fs.rmSync(scratch, { recursive: true, force: true }));
for (const file of files) {
  const bundle = path.join(scratch, `${file.replaceAll(path.sep, '_')}.mjs`);
  esbuild.buildSync({
    entryPoints: [path.join(src, file)],
    bundle: true,
    format: 'esm',
    platform: 'browser', // as Vite bundles the app: the packages' browser builds
    jsx: 'automatic',
    jsxImportSource: 'preact',
    external: ['node:*'],
    loader: { '.css': 'empty' },
    sourcemap: 'inline',
    outfile: bundle,
  });
  await import(pathToFileURL(bundle).href);
}
