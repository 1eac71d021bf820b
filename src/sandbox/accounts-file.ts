// `dropline sandbox --accounts <file>`: the sandbox's accounts read from a JSON file, each field
// checked (docs/sandbox.md "Run it").
import { readFileSync } from 'node:fs';
import { jsonProblem, withoutBom } from '../config/json-problem.ts';
import type { Account, AccountWebhook, WhatsAppSetup } from './accounts.ts';

/**
 * Reads `--accounts <file>`: `[{"username","password"}]` or `{"<username>": "<password>"}`. Array
 * elements may also carry the email settings `apiKey`, `email`, `emailTemplates` and
 * `emailSenderDomains` (docs/sandbox.md, "Email"), and `shortCodes` (docs/sandbox.md "POST /momessage").
 */
export function readAccountsFile(path: string): Account[] {
  const text = withoutBom(readFileSync(path, 'utf8'));
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // Its own message would quote the passwords.
    throw new Error(`not valid JSON: ${jsonProblem(err, text)}`);
  }
  const list = Array.isArray(raw)
    ? raw
    : typeof raw === 'object' && raw !== null
      ? Object.entries(raw).map(([username, password]) => ({ username, password }))
      : null;
  if (!list || list.length === 0) throw new Error('expected a non-empty array or object of accounts');
  return list.map((a, i) => {
    const o = a as Record<string, unknown>;
    if (typeof o?.username !== 'string' || typeof o.password !== 'string' || o.username === '') {
      throw new Error(`account ${i}: username and password must be text`);
    }
    const strings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
    if (o.apiKey !== undefined && typeof o.apiKey !== 'string')
      throw new Error(`account ${i}: apiKey must be text`);
    if (o.email !== undefined && typeof o.email !== 'boolean')
      throw new Error(`account ${i}: email must be true or false`);
    for (const f of ['emailTemplates', 'emailSenderDomains'] as const) {
      if (o[f] !== undefined && !strings(o[f]))
        throw new Error(`account ${i}: ${f} must be an array of text`);
    }
    if (o.shortCodes !== undefined && (!strings(o.shortCodes) || (o.shortCodes as string[]).length === 0))
      throw new Error(`account ${i}: shortCodes must be a non-empty array of text`);
    if (o.rcs !== undefined && typeof o.rcs !== 'boolean')
      throw new Error(`account ${i}: rcs must be true or false`);
    const hook = o.webhook as Record<string, unknown> | undefined;
    if (
      hook !== undefined &&
      (typeof hook !== 'object' ||
        hook === null ||
        typeof hook.url !== 'string' ||
        (hook.username !== undefined && typeof hook.username !== 'string') ||
        (hook.password !== undefined && typeof hook.password !== 'string'))
    )
      throw new Error(`account ${i}: webhook must be {"url", "username"?, "password"?} of text`);
    const wa = o.whatsapp as Record<string, unknown> | undefined;
    if (
      wa !== undefined &&
      (typeof wa !== 'object' ||
        wa === null ||
        !strings(wa.numbers) ||
        typeof wa.templates !== 'object' ||
        wa.templates === null ||
        !Object.values(wa.templates).every((n) => Number.isInteger(n) && (n as number) >= 0))
    )
      throw new Error(
        `account ${i}: whatsapp must be {"numbers": [text], "templates": {"<id>": <parameters>}}`,
      );
    return {
      username: o.username,
      password: o.password,
      ...(o.apiKey !== undefined && { apiKey: o.apiKey as string }),
      ...(o.email !== undefined && { email: o.email as boolean }),
      ...(o.emailTemplates !== undefined && { emailTemplates: o.emailTemplates as string[] }),
      ...(o.emailSenderDomains !== undefined && { emailSenderDomains: o.emailSenderDomains as string[] }),
      ...(o.rcs !== undefined && { rcs: o.rcs as boolean }),
      ...(hook !== undefined && { webhook: hook as unknown as AccountWebhook }),
      ...(wa !== undefined && { whatsapp: wa as unknown as WhatsAppSetup }),
      ...(o.shortCodes !== undefined && { shortCodes: o.shortCodes as string[] }),
    };
  });
}
