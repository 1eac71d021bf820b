// What a reply to a short code is answered with and which keywords it is read against
// (docs/opt-outs.md "Keywords"): `replies.byShortCode["<code>"]`, key by key, over the global
// `replies` settings (their defaults filled by the configuration's schema; `optOut`, the older
// spelling, already read as `replies` there).
import type { Config } from '../config/schema.ts';
import type { KeywordSets } from './keywords.ts';

export interface ReplySettings {
  readonly keywords: KeywordSets;
  /** null: a help keyword is recorded, not answered. */
  readonly helpText: string | null;
  readonly confirmOptOut: string | null;
  readonly confirmOptIn: string | null;
}

type RepliesPart = Pick<Config, 'replies'>;

/** The settings of replies sent to `shortCode` (the SMSC's destination address). */
export function replySettings(config: RepliesPart, shortCode: string): ReplySettings {
  const global = config.replies;
  const own = Object.hasOwn(global.byShortCode, shortCode) ? global.byShortCode[shortCode] : undefined;
  const pick = <K extends 'helpText' | 'confirmOptOut' | 'confirmOptIn'>(key: K): string | null =>
    own?.[key] !== undefined ? own[key] : global[key];
  const list = (key: keyof KeywordSets): readonly string[] => own?.keywords?.[key] ?? global.keywords[key];
  return {
    keywords: { optOut: list('optOut'), optIn: list('optIn'), help: list('help') },
    helpText: pick('helpText'),
    confirmOptOut: pick('confirmOptOut'),
    confirmOptIn: pick('confirmOptIn'),
  };
}
