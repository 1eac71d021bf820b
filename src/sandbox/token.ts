// POST /token (docs/sandbox.md "Tokens"): a login by password (Basic credentials) or by refresh
// token, each new token expiring the account's previous one; faults of one account fire for its
// logins.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { applyStatusFault, parseBasic, sendJson } from './http.ts';
import type { SandboxState } from './state.ts';

type TokenDeps = Pick<SandboxState, 'accounts' | 'faults' | 'meter' | 'random' | 'tokenLifetimeS' | 'log'>;

export function createTokenHandler(
  deps: TokenDeps,
): (req: IncomingMessage, res: ServerResponse, raw: Buffer) => void {
  const { accounts, faults, meter, random, log: logRequest } = deps;
  return (req, res, raw) => {
    const form = parseTokenForm(raw, req.headers['content-type']);
    const grant = typeof form.grant_type === 'string' ? form.grant_type : undefined;
    // Whose login it is, for faults of one account: the Basic user, or the refresh token's.
    const claimed =
      grant === 'password'
        ? parseBasic(req.headers.authorization)?.username
        : grant === 'refresh_token' && typeof form.refresh_token === 'string'
          ? (accounts.refreshOwner(form.refresh_token) ?? undefined)
          : undefined;
    const fired = faults.pick('token', random(), claimed);
    const done = (status: number, body: unknown, fault?: string) => {
      logRequest({ endpoint: '/token', status, grant, fault, at: Date.now() });
      sendJson(res, status, body);
    };
    if (fired && applyStatusFault(fired, res, (status, body) => done(status, body, fired.kind))) return;

    const login = loginOf(deps, grant, form, req.headers.authorization);
    if ('error' in login) return done(login.error === 'invalid_client' ? 401 : 400, login);
    const token = accounts.issue(login.username);
    meter.login(login.username, grant === 'password' ? 'password' : 'refresh');
    const body = {
      access_token: token.accessToken,
      token_type: 'bearer',
      expires_in: deps.tokenLifetimeS,
      refresh_token: token.refreshToken,
    };
    if (fired?.kind === 'timeout')
      return logRequest({ endpoint: '/token', status: 0, grant, fault: 'timeout', at: Date.now() });
    if (fired?.kind === 'reset') {
      logRequest({ endpoint: '/token', status: 0, grant, fault: 'reset', at: Date.now() });
      req.socket.destroy();
      return;
    }
    done(200, body);
  };
}

type Login = { username: string } | { error: string; error_description: string };

/** The account a grant logs in, or the OAuth error it is refused with (401 invalid_client, else 400). */
function loginOf(
  deps: TokenDeps,
  grant: string | undefined,
  form: Record<string, unknown>,
  authorization: string | undefined,
): Login {
  if (grant === 'password') {
    const basic = parseBasic(authorization);
    if (!basic || !deps.accounts.checkPassword(basic.username, basic.password))
      return { error: 'invalid_client', error_description: 'wrong or missing Basic credentials' };
    return { username: basic.username };
  }
  if (grant === 'refresh_token') {
    const refresh = typeof form.refresh_token === 'string' ? form.refresh_token : '';
    const username = deps.accounts.refreshOwner(refresh);
    if (!username)
      return { error: 'invalid_grant', error_description: 'the refresh token is unknown or was replaced' };
    return { username };
  }
  return {
    error: 'unsupported_grant_type',
    error_description: 'grant_type must be password or refresh_token',
  };
}

/** The service asks for JSON (docs/service.md "Tokens"); OAuth clients send a form. Both are accepted. */
function parseTokenForm(raw: Buffer, contentType: string | undefined): Record<string, unknown> {
  const text = raw.toString('utf8');
  if (!/x-www-form-urlencoded/i.test(contentType ?? '')) {
    try {
      const v: unknown = JSON.parse(text);
      if (typeof v === 'object' && v !== null) return v as Record<string, unknown>;
    } catch {
      // fall through to the form reading
    }
  }
  return Object.fromEntries(new URLSearchParams(text));
}
