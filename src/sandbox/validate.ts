// What makes POST /mtmessage/massive answer 400, in the sandbox's reading of docs/service.md
// "POST /mtmessage/massive". Reasons name the field by path and never echo the number (it is
// personal data).

export interface AcceptedMessage {
  readonly text: string;
  /** messageId is optional: absent means an empty messageId. */
  readonly destinations: readonly { readonly to: string; readonly messageId?: string | undefined }[];
  readonly notifyUrl: string | null;
  readonly notifyContentType: string;
  readonly callbackData: string;
  /** Its `shortCode` (text or a number, read as its digits); null: none. */
  readonly shortCode: string | null;
}

export type MassiveCheck =
  | { readonly ok: true; readonly bulkId: string; readonly messages: readonly AcceptedMessage[] }
  | { readonly ok: false; readonly reason: string };

// Colombian numbers have 12 digits (57 + 10); others are E.164 digits without '+', 8 to 15.
const DIGITS = /^\d{8,15}$/;

export function checkNumber(to: string): string | null {
  if (!DIGITS.test(to)) return 'is not a number of 8 to 15 digits';
  if (to.startsWith('57') && to.length !== 12) return 'is a Colombian number (57…) without 12 digits';
  return null;
}

export function checkMassive(body: unknown): MassiveCheck {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, reason: 'the body must be a JSON object' };
  }
  const root = body as Record<string, unknown>;
  if (root.bulkId !== undefined && typeof root.bulkId !== 'string') {
    return { ok: false, reason: 'bulkId must be text' };
  }
  const messages = root.messages;
  if (!Array.isArray(messages)) return { ok: false, reason: 'messages is required and must be an array' };
  if (messages.length === 0) return { ok: false, reason: 'messages must not be empty' };
  const out: AcceptedMessage[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as Record<string, unknown> | null;
    const at = `messages[${i}]`;
    if (typeof m !== 'object' || m === null || Array.isArray(m))
      return { ok: false, reason: `${at} must be an object` };
    const destinations = m.destinations;
    if (!Array.isArray(destinations)) {
      return { ok: false, reason: `${at}.destinations is required and must be an array` };
    }
    if (destinations.length === 0) return { ok: false, reason: `${at}.destinations must not be empty` };
    if (typeof m.text !== 'string' || m.text === '')
      return { ok: false, reason: `${at}.text must be non-empty text` };
    for (let j = 0; j < destinations.length; j++) {
      const d = destinations[j] as Record<string, unknown> | null;
      const dat = `${at}.destinations[${j}]`;
      if (typeof d !== 'object' || d === null) return { ok: false, reason: `${dat} must be an object` };
      if (typeof d.to !== 'string' || d.to === '') return { ok: false, reason: `${dat}.to is required text` };
      const bad = checkNumber(d.to);
      if (bad) return { ok: false, reason: `${dat}.to ${bad}` };
      if (d.messageId !== undefined && typeof d.messageId !== 'string') {
        return { ok: false, reason: `${dat}.messageId must be text` };
      }
    }
    let notifyUrl: string | null = null;
    if (m.notifyUrl !== undefined) {
      if (typeof m.notifyUrl !== 'string' || !isHttpUrl(m.notifyUrl)) {
        return { ok: false, reason: `${at}.notifyUrl must be an absolute http(s) URL` };
      }
      notifyUrl = m.notifyUrl;
    }
    if (
      m.notifyContentType !== undefined &&
      (typeof m.notifyContentType !== 'string' || m.notifyContentType === '')
    ) {
      return { ok: false, reason: `${at}.notifyContentType must be text` };
    }
    if (m.callbackData !== undefined && typeof m.callbackData !== 'string') {
      return { ok: false, reason: `${at}.callbackData must be text (send a JSON object as escaped text)` };
    }
    let shortCode: string | null = null;
    if (m.shortCode !== undefined) {
      // Its type is not shown: digits as text or as a number.
      const code = typeof m.shortCode === 'number' ? String(m.shortCode) : m.shortCode;
      if (typeof code !== 'string' || !/^\d{3,10}$/.test(code))
        return { ok: false, reason: `${at}.shortCode must be a short code (3 to 10 digits)` };
      shortCode = code;
    }
    out.push({
      shortCode,
      text: m.text,
      destinations: destinations as { to: string; messageId?: string }[] as {
        to: string;
        messageId: string;
      }[],
      notifyUrl,
      notifyContentType: (m.notifyContentType as string | undefined) ?? 'application/json',
      callbackData: (m.callbackData as string | undefined) ?? '',
    });
  }
  return { ok: true, bulkId: (root.bulkId as string | undefined) ?? '', messages: out };
}

function isHttpUrl(s: string): boolean {
  if (!URL.canParse(s)) return false;
  const u = new URL(s);
  return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
}

// GSM 03.38 basic set; the extension table costs two septets per character.
const GSM7_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const GSM7_EXT = '^{}\\[~]|€\f';
const BASIC = new Set(GSM7_BASIC);
const EXT = new Set(GSM7_EXT);

/** SMS segments of a text: GSM-7 160/153 septets, otherwise UCS-2 70/67 code units. */
export function smsSegments(text: string): number {
  let septets = 0;
  let gsm = true;
  for (const ch of text) {
    if (BASIC.has(ch)) septets++;
    else if (EXT.has(ch)) septets += 2;
    else {
      gsm = false;
      break;
    }
  }
  if (gsm) return septets <= 160 ? 1 : Math.ceil(septets / 153);
  return text.length <= 70 ? 1 : Math.ceil(text.length / 67);
}
