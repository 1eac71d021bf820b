// What a test reads of a running sandbox over HTTP (docs/sandbox.md "Test surface"): a ledger
// of what an endpoint accepted, and the requests one endpoint was sent.
import type { RequestRecord } from '../../src/sandbox/http.ts';

/** GET /_sandbox/<name>/ledger (`momessage`, `whatsapp`, `email`). */
export async function sandboxLedger<E>(
  url: string,
  name: string,
): Promise<{ accepted: number; duplicates: number; entries: E[] }> {
  const res = await fetch(`${url}/_sandbox/${name}/ledger`);
  return (await res.json()) as { accepted: number; duplicates: number; entries: E[] };
}

/** The requests to `endpoint` in GET /_sandbox/requests, oldest first. */
export async function sandboxRequests(url: string, endpoint: string): Promise<RequestRecord[]> {
  const res = await fetch(`${url}/_sandbox/requests`);
  return ((await res.json()) as { requests: RequestRecord[] }).requests.filter(
    (r) => r.endpoint === endpoint,
  );
}
