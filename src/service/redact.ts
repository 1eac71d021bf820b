// Anything that may reach a log line, an error message or an exception passes through here:
// the notifyUrl carries the receiver's token in its query string (DESIGN-NOTES 2), and phone
// numbers are personal data (DESIGN-NOTES 8).

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

/** The secrets worth scrubbing: the empty and the very short ones left out. */
export function secretsOf(values: readonly string[]): string[] {
  return values.filter((v) => v.length >= MIN_SECRET);
}

/** The values of a URL's query string (the notify token), to be scrubbed by value. */
export function querySecrets(url: string | undefined): string[] {
  if (url === undefined) return [];
  try {
    return [...new URL(url).searchParams.values()].filter((v) => v.length > 0);
  } catch {
    return [];
  }
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
