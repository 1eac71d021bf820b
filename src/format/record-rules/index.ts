// The channels' record rules, keyed by channel: the one list the reader reads them from
// (docs/architecture.md "The reader"). A channel's entry says which channel-only directives
// its files take (`#! subject:` …; FORMAT.md 8.1) and makes its rules for one file.
import type { Channel } from '../directives.ts';
import { EmailRules } from './email.ts';
import { RcsRules, SmsRules } from './sms.ts';
import type { ReadContext, RecordRules } from './types.ts';
import { WhatsAppRules } from './whatsapp.ts';

export type { ParserState, ReadContext, RecordRules } from './types.ts';

/** The directives only some channels' files take. */
export type ChannelDirective = 'subject' | 'templateId' | 'source' | 'flash';

interface ChannelRecords {
  readonly directives: readonly ChannelDirective[];
  create(ctx: ReadContext): RecordRules;
}

/** In the order BAD_DIRECTIVE names the channels a directive is for. */
const RECORD_RULES: Record<Channel, ChannelRecords> = {
  sms: { directives: ['flash'], create: (ctx) => new SmsRules(ctx) },
  rcs: { directives: [], create: (ctx) => new RcsRules(ctx) },
  email: { directives: ['subject', 'templateId'], create: (ctx) => new EmailRules(ctx) },
  whatsapp: { directives: ['templateId', 'source'], create: (ctx) => new WhatsAppRules(ctx) },
};

/** The record rules of `channel` for one file. */
export function recordRules(channel: Channel, ctx: ReadContext): RecordRules {
  return RECORD_RULES[channel].create(ctx);
}

/** The channels whose files take `directive`. */
export function channelsTaking(directive: ChannelDirective): Channel[] {
  return (Object.keys(RECORD_RULES) as Channel[]).filter((c) =>
    RECORD_RULES[c].directives.includes(directive),
  );
}
