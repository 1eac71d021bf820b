// The monitoring endpoints (docs/sandbox.md "Monitoring"): GET /platformmonitory and the two
// /bireports/ ones, Bearer-authenticated as /mtmessage/massive is; their query parameters are
// "not shown" and ignored. What they show is the sandbox's own traffic (traffic.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { applyStatusFault, sendJson } from './http.ts';
import type { SandboxState } from './state.ts';

export type MonitoringEndpoint = 'platformmonitory' | 'effectivitybyclient' | 'msgmtclient';
const MONITORING_PATHS: Record<MonitoringEndpoint, string> = {
  platformmonitory: '/platformmonitory',
  effectivitybyclient: '/bireports/effectivitybyclient',
  msgmtclient: '/bireports/msgmtclient',
};
export const MONITORING_BY_PATH = new Map(
  Object.entries(MONITORING_PATHS).map(([name, path]) => [path, name as MonitoringEndpoint]),
);

type MonitoringDeps = Pick<SandboxState, 'accounts' | 'faults' | 'traffic' | 'random' | 'now' | 'log'>;

export function createMonitoringHandler(
  deps: MonitoringDeps,
): (req: IncomingMessage, res: ServerResponse, endpoint: MonitoringEndpoint) => void {
  const { accounts, faults, traffic, random, now, log: logRequest } = deps;
  return (req, res, endpoint) => {
    const path = MONITORING_PATHS[endpoint];
    let account: string | undefined;
    const done = (status: number, body: unknown, fault?: string) => {
      logRequest({ endpoint: path, status, account, fault, at: Date.now() });
      sendJson(res, status, body);
    };
    const auth = req.headers.authorization ?? '';
    const bearer = /^Bearer\s+(\S+)$/i.exec(auth)?.[1];
    const check = bearer ? accounts.check(bearer) : null;
    // Drawn only when the endpoint has rules: a dashboard that polls leaves the delivery
    // outcomes `random` gives the sends as they were.
    const fired = faults.pickIfAny(endpoint, random, check?.ok ? check.username : undefined);
    if (fired?.rule.account !== undefined) account = fired.rule.account;
    if (fired && applyStatusFault(fired, res, (status, body) => done(status, body, fired.kind))) return;

    if (!bearer || !check) return done(401, { message: 'a Bearer token is required' });
    if (!check.ok) return done(401, { message: check.reason });
    account = check.username;
    if (fired?.kind === 'revoke') {
      accounts.revoke(check.username);
      return done(401, { message: 'the token is unknown or was replaced by a newer one' }, 'revoke');
    }
    if (fired?.kind === 'timeout') {
      logRequest({ endpoint: path, status: 0, account, fault: 'timeout', at: Date.now() });
      return;
    }
    if (fired?.kind === 'reset') {
      logRequest({ endpoint: path, status: 0, account, fault: 'reset', at: Date.now() });
      req.socket.destroy();
      return;
    }
    if (endpoint === 'platformmonitory') {
      return done(200, { at: new Date(now()).toISOString(), operators: traffic.platform() });
    }
    const window = traffic.window();
    if (endpoint === 'effectivitybyclient') {
      return done(200, { account, ...window, statuses: traffic.effectivity(account) });
    }
    done(200, { account, ...window, messages: traffic.messages(account) });
  };
}
