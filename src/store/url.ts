// The `store` setting, parsed once: `sqlite:<path>` (also `sqlite:///abs/path`),
// `sqlite::memory:` or `:memory:` (tests), `postgres://…` / `postgresql://…` (libpq's URL;
// `?schema=name` puts dropline's tables in that schema instead of `public`).

import { resolve } from 'node:path';
import { DroplineError } from '../errors.ts';

export type StoreUrl =
  | { kind: 'sqlite'; path: string }
  | {
      kind: 'postgres';
      /** The URL handed to pg, without dropline's own `schema` parameter. */
      connectionString: string;
      schema: string | null;
      /** The URL as it may be shown: the password replaced. */
      redacted: string;
    };

/** A schema name used unquoted in search_path and CREATE SCHEMA: a plain identifier. */
const SCHEMA = /^[a-z_][a-z0-9_]{0,62}$/;

export function parseStoreUrl(url: string, cwd: string = process.cwd()): StoreUrl {
  if (url === ':memory:' || url === 'sqlite::memory:') return { kind: 'sqlite', path: ':memory:' };
  if (url.startsWith('sqlite:')) {
    let path = url.slice('sqlite:'.length);
    if (path.startsWith('//')) path = path.slice(2);
    if (path === '')
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        'store: sqlite: needs a file path, as in sqlite:./.dropline/state.db',
      );
    return { kind: 'sqlite', path: resolve(cwd, path) };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new DroplineError('DROPLINE_ERR_CONFIG', `store: ${redactStoreUrl(url)} is not a valid URL`);
    }
    const schema = parsed.searchParams.get('schema');
    if (schema !== null && !SCHEMA.test(schema))
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        `store: schema "${schema}" must be a lower-case identifier (letters, digits, _)`,
      );
    parsed.searchParams.delete('schema');
    const connectionString = parsed.toString();
    return { kind: 'postgres', connectionString, schema, redacted: redactStoreUrl(url) };
  }
  throw new DroplineError(
    'DROPLINE_ERR_CONFIG',
    `store: "${url.split(':')[0]}:…" is not a store; use sqlite:<path> or postgres://…`,
  );
}

/** `postgres://app:s3cret@db/x` → `postgres://app:***@db/x`: a store URL fit for a log or an error. */
export function redactStoreUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:/@]*):[^@/]*@/i, '$1:***@');
}
