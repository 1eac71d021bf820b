// Anything that may reach a log line, an error message or an exception passes through here:
// the notifyUrl carries the receiver's token in its query string, and phone numbers
// are personal data (docs/configuration.md "Secrets").

/** `https://h/notify?token=s3cret` → `https://h/notify?<redacted>`; non-URLs lose any `?…` tail. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const hash = url.indexOf('#', q);
  return `${url.slice(0, q)}?<redacted>${hash === -1 ? '' : url.slice(hash)}`;
}

/** `573001234567` → `57300****567`: the first 5 and last 3 digits stay. */
export function maskNumber(number: string): string {
  if (number.length <= 8) return `${'*'.repeat(Math.max(0, number.length - 3))}${number.slice(-3)}`;
  return `${number.slice(0, 5)}${'*'.repeat(number.length - 8)}${number.slice(-3)}`;
}

// 8 to 15 digits, optionally after '+': phone-number shaped; 28-digit transaction numbers stay.
const NUMBER_RUN = /(?<![\d])\+?\d{8,15}(?![\d])/g;
const URL_QUERY = /(\bhttps?:\/\/[^\s?#"']*)\?[^\s#"']*/gi;

/** Masks phone-number-shaped digit runs and URL query strings inside free text. */
export function redactText(text: string): string {
  return text.replace(URL_QUERY, '$1?<redacted>').replace(NUMBER_RUN, (m) => {
    const plus = m.startsWith('+') ? '+' : '';
    return plus + maskNumber(plus ? m.slice(1) : m);
  });
}

/**
 * `text` without any of `secrets`, each replaced by `<redacted>`: what a service answered may
 * echo what it was sent (an Authorization header, a password, the notifyUrl's token in any
 * escaping), and only removing them by value catches every form.
 */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length > 0) out = out.replaceAll(s, '<redacted>');
  return out;
}

/** Secrets this short are not scrubbed: replacing them would garble every reason that holds them. */
const MIN_SECRET = 6;

/**
 * The secrets worth scrubbing (the empty and the very short ones left out), each also as JSON
 * writes it inside a string (a quote or backslash escaped, and `/` as `\/` as PHP does): a
 * service echoing a request in its JSON answer shows them so.
 */
export function secretsOf(values: readonly string[]): string[] {
  const out = new Set<string>();
  for (const v of values) {
    if (v.length < MIN_SECRET) continue;
    const json = JSON.stringify(v).slice(1, -1);
    for (const form of [v, json, json.replaceAll('/', '\\/')]) out.add(form);
  }
  return [...out];
}

/**
 * `text` fit to keep and show: without `secrets`, phone numbers and URL query strings masked,
 * at most `max` characters. The secrets go first, and again after: masking digit runs would
 * change a secret that holds some, which would then no longer match.
 */
export function redactSecrets(text: string, secrets: readonly string[], max = 500): string {
  const out = scrubSecrets(redactText(scrubSecrets(text, secrets)), secrets);
  return out.length > max ? `${out.slice(0, max - 3)}...` : out;
}

/**
 * The values of a URL's query string (the notify token), to be scrubbed by value: each as
 * written in the URL (percent-encoded, as it is sent) and decoded (as a service may echo it).
 */
export function querySecrets(url: string | undefined): string[] {
  const q = url?.indexOf('?') ?? -1;
  if (url === undefined || q < 0) return [];
  const out: string[] = [];
  for (const pair of url
    .slice(q + 1)
    .split('#')[0]!
    .split('&')) {
    const raw = pair.slice(pair.indexOf('=') + 1);
    if (raw === '') continue;
    out.push(raw);
    try {
      const decoded = decodeURIComponent(raw.replaceAll('+', ' '));
      if (decoded !== raw) out.push(decoded);
    } catch {
      // Not valid percent-encoding: only as written.
    }
  }
  return out;
}

/**
 * A service URL fit to show: userinfo (`user:password@`) becomes `***@` and the query string
 * goes, as in redactUrl; the fragment is dropped.
 */
export function redactServiceUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return redactUrl(url);
  }
  const userinfo = u.username || u.password ? '***@' : '';
  const query = u.search ? '?<redacted>' : '';
  return `${u.protocol}//${userinfo}${u.host}${u.pathname}${query}`;
}
