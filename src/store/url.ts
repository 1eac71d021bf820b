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
    };

/** A schema name used as is in SQL (search_path, CREATE SCHEMA): a plain identifier only. */
const SCHEMA = /^[a-z_][a-z0-9_]{0,62}$/;

export function checkSchemaName(schema: string): string {
  if (!SCHEMA.test(schema))
    throw new DroplineError(
      'DROPLINE_ERR_CONFIG',
      `store: schema "${schema}" must be a plain lower-case PostgreSQL identifier (letters, digits, _)`,
    );
  return schema;
}

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
      // Not quoted: what does not parse cannot be redacted reliably (an unencoded space in the
      // password, a password given as a query parameter).
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        `store: the ${url.startsWith('postgresql:') ? 'postgresql' : 'postgres'}:// URL is not a valid URL (the port must be a number; a password holding @ : / ? # or a space must be percent-encoded)`,
      );
    }
    const schema = parsed.searchParams.get('schema');
    if (schema !== null) checkSchemaName(schema);
    parsed.searchParams.delete('schema');
    const connectionString = parsed.toString();
    return { kind: 'postgres', connectionString, schema };
  }
  // Only the scheme is quoted: what follows it may hold a password.
  const colon = url.indexOf(':');
  const what =
    url.trim() === ''
      ? 'is empty'
      : colon < 0
        ? `"${url}" names no kind of store`
        : `"${url.slice(0, colon)}:…" is not a store`;
  throw new DroplineError('DROPLINE_ERR_CONFIG', `store: ${what}; use sqlite:<path> or postgres://…`);
}

/** A URL's credentials up to the last `@` of the URL: a password may hold `/`, `:` or `@` itself. */
const CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s@]*(?:@[^\s@]*)*)@/gi;

/** A PostgreSQL URL's query string (libpq takes `?password=`). */
const PG_QUERY = /\b(postgres(?:ql)?:\/\/[^\s?#]*)\?[^\s#]*/gi;

/**
 * `postgres://app:s3cret@db/x?password=p` → `postgres://app:***@db/x?***`, for every URL in a
 * text (a store URL in a message, a driver's error quoting one): fit for a log or an error.
 */
export function redactStoreUrl(text: string): string {
  return text
    .replace(CREDENTIALS, (_all, scheme: string, userinfo: string) => {
      const colon = userinfo.indexOf(':');
      return colon < 0 ? `${scheme}${userinfo}@` : `${scheme}${userinfo.slice(0, colon)}:***@`;
    })
    .replace(PG_QUERY, '$1?***');
}
