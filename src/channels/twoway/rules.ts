// Two-way SMS files' record rules (docs/format.md "Two-way SMS files"): read as SMS files are.
import { SmsRules } from '../sms/rules.ts';

/**
 * A two-way file is an SMS file sent one request a recipient: its layouts, templates, segments,
 * encodings, warnings and transliteration are an SMS file's (each request is one SMS of that
 * many segments), so its cost reads the same. Its own class so the channel's reading can part
 * from SMS's without touching it.
 */
export class TwoWayRules extends SmsRules {}
