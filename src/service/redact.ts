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
