// The dashboard's modules are served as they are (src/ops/assets.ts, docs/dashboard.md
// "Changing it"): a module the page imports but the server does not list would break the
// page only in a browser. This fails first, on each module and each import not served.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { asset } from '../../src/ops/assets.ts';

const DIR = new URL('../../src/ops/dashboard/', import.meta.url);
const modules = readdirSync(DIR).filter((f) => f.endsWith('.js'));

describe('the dashboard’s files', () => {
  it('every module of src/ops/dashboard/ is served under /assets/, as a script', () => {
    expect(modules.length).toBeGreaterThan(10);
    for (const m of modules) {
      const a = asset(`/assets/${m}`);
      expect(a?.headers['content-type'], m).toBe('text/javascript; charset=utf-8');
      expect(a?.body.toString('utf8'), m).toBe(readFileSync(new URL(m, DIR), 'utf8'));
    }
  });

  it('every import of a module, and the page’s own script and styles, are served', () => {
    const wanted = modules.flatMap((m) =>
      [...readFileSync(new URL(m, DIR), 'utf8').matchAll(/from '\.\/([\w-]+\.js)'/g)].map(
        (i) => `/assets/${i[1]}`,
      ),
    );
    const page = readFileSync(new URL('index.html', DIR), 'utf8');
    wanted.push(...[...page.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((i) => i[1]!));
    expect(wanted).toContain('/assets/uplot.js');
    expect(wanted.filter((path) => asset(path) === null)).toEqual([]);
  });
});
