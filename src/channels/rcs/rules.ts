// RCS files' record rules: read as an SMS file is (sms/rules.ts), one message a recipient.
import type { ReadContext } from '../../format/channel-rules.ts';
import { type PreparedMessage, UCS2 } from '../../format/message.ts';
import type { NumberResult } from '../../format/numbers.ts';
import { SmsRules } from '../sms/rules.ts';

/**
 * RCS files (docs/format.md "RCS files"): read as SMS files, but one message a recipient
 * (segments 1, whatever its length), no UCS2_MESSAGE, never transliterated.
 */
export class RcsRules extends SmsRules {
  constructor(ctx: ReadContext) {
    // docs/format.md "RCS files": the text is sent as written, whatever the source's transliterate.
    super(ctx, false);
    ctx.summary.summary.transliteration.mode = 'never';
  }

  /** Its encoding counted as an SMS's would be; warnings as an SMS text's but UCS2_MESSAGE. */
  override accept(
    line: number,
    k: number,
    result: Extract<NumberResult, { ok: true }>,
    msg: PreparedMessage,
    messageId: string | null,
  ): void {
    const summary = this.summary.summary;
    const encoding = msg.segments.encoding;
    summary.segments++;
    if (encoding === 'gsm7') summary.encodings.gsm7++;
    else summary.encodings.ucs2++;
    this.summary.country(result.country, 1);
    this.stager.emitRecipient(line, k, result, result.country, msg.text, messageId, 1, encoding);
    if (this.parser.layout === 'personalized') this.warnMessage(line, msg);
  }

  protected override warnMessage(line: number, msg: PreparedMessage): void {
    this.stager.warn(line, msg, msg.warnings & ~UCS2, true);
  }
}
