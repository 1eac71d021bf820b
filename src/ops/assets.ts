// The dashboard's files (src/ops/dashboard/, and uPlot from its npm package), served as they
// are: no build step. Read once, on first use.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface Asset {
  headers: Record<string, string>;
  body: Buffer;
}

const HERE = new URL('./dashboard/', import.meta.url);

/** What the dashboard's page may load and do: only this server, no inline script or style. */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The page's ES modules (src/ops/dashboard/*.js): each served at /assets/<name>.js. */
const MODULES = [
  'app',
  'api',
  'dom',
  'notice',
  'i18n',
  'codes',
  'wording',
  'progress',
  'summary',
  'list-view',
  'file-view',
  'file-sections',
  'chart',
  'check-view',
  'health-view',
  'review-view',
  'login-view',
];

const SCRIPT = 'text/javascript; charset=utf-8';

const FILES: Record<string, { from: URL | string; type: string }> = {
  '/': { from: new URL('index.html', HERE), type: 'text/html; charset=utf-8' },
  ...Object.fromEntries(
    MODULES.map((name) => [`/assets/${name}.js`, { from: new URL(`${name}.js`, HERE), type: SCRIPT }]),
  ),
  '/assets/style.css': { from: new URL('style.css', HERE), type: 'text/css; charset=utf-8' },
  '/assets/uplot.js': { from: 'uplot/dist/uPlot.esm.js', type: SCRIPT },
  '/assets/uplot.css': { from: 'uplot/dist/uPlot.min.css', type: 'text/css; charset=utf-8' },
};

const loaded = new Map<string, Asset>();

/** The dashboard file at this path, or null. */
export function asset(path: string): Asset | null {
  const known = loaded.get(path);
  if (known) return known;
  const spec = Object.hasOwn(FILES, path) ? FILES[path] : undefined;
  if (!spec) return null;
  const file = typeof spec.from === 'string' ? fileURLToPath(import.meta.resolve(spec.from)) : spec.from;
  const a: Asset = {
    body: readFileSync(file),
    headers: {
      'content-type': spec.type,
      // A new version's files are fetched again, never a stale script against a new API.
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      ...(path === '/' ? { 'content-security-policy': CSP, 'x-frame-options': 'DENY' } : {}),
    },
  };
  loaded.set(path, a);
  return a;
}
