// Who answers a user's reply (docs/opt-outs.md "Answers"): the two-way account whose short code
// it was sent to (the account's own, or one of its sources' `shortCode`), with that account's
// client; any other short code (an SMS campaign's) with the SMS account's token.
import { TwoWayAccount } from '../channels/twoway/account.ts';
import {
  answerersByShortCode,
  MoMessageAnswerer,
  type ReplyAnswerer,
  twoWayAnswerer,
} from '../replies/answers.ts';
import type { Runtime } from './runtime.ts';

export function replyAnswerer(
  rt: Pick<Runtime, 'sendingAccounts' | 'serviceUrl' | 'client' | 'loaded'>,
): ReplyAnswerer {
  const byShortCode = new Map<string, ReplyAnswerer>();
  const add = (shortCode: string, account: TwoWayAccount) => {
    // The first account named for a short code answers for it.
    if (!byShortCode.has(shortCode)) byShortCode.set(shortCode, twoWayAnswerer(account.replies.client));
  };
  for (const a of rt.sendingAccounts.values()) if (a instanceof TwoWayAccount) add(a.replies.shortCode, a);
  for (const s of rt.loaded.config.sources) {
    const a = rt.sendingAccounts.get(s.account);
    if (s.shortCode !== undefined && a instanceof TwoWayAccount) add(s.shortCode, a);
  }
  return answerersByShortCode(
    byShortCode,
    new MoMessageAnswerer({ baseUrl: rt.serviceUrl, tokens: rt.client.tokens }),
  );
}
