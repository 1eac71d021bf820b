// `validate`'s question to an email account (docs/channels.md "Email"): is the file's
// templateId one of its stored templates? Loaded only when a validate has an email account.
import { readFileSync } from 'node:fs';
import type { AccountConfig } from '../../config/schema.ts';
import { refuseUnknownTemplate } from '../../format/email.ts';
import type { ReadSummary } from '../../format/read-types.ts';
import { EmailClient } from './client.ts';

/**
 * Asks the account for its stored templates (GET /email/v1/templates) as the daemon does,
 * once and briefly: 'found', 'missing' (the summary rejected UNKNOWN_TEMPLATE), or why the
 * list could not be had (the file is then judged without it, as the daemon would send it).
 */
export async function checkTemplate(summary: ReadSummary, account: AccountConfig): Promise<string> {
  if (account.channel !== 'email') return 'not an email account';
  let apiKey = account.apiKey;
  if (apiKey === undefined && account.apiKeyFile !== undefined) {
    try {
      apiKey = readFileSync(account.apiKeyFile, 'utf8').trim();
    } catch (err) {
      return `cannot read apiKeyFile (${(err as NodeJS.ErrnoException).code})`;
    }
  }
  if (!apiKey) return 'the account has no apiKey';
  const client = new EmailClient({ baseUrl: account.baseUrl, apiKey, timeoutMs: 10_000 });
  try {
    refuseUnknownTemplate(summary, await client.templates());
    return summary.accepted ? 'found' : 'missing';
  } catch (err) {
    return (err as Error).message;
  } finally {
    await client.close();
  }
}
