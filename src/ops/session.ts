// The dashboard's login off loopback: the ops token typed once into a form, kept as a
// session cookie (HttpOnly, SameSite=Strict). The cookie is not the token: it is an expiry
// and an HMAC of it keyed by the token, so every worker sharing the token (behind a
// balancer) accepts it without a session table, and changing the token ends every session.

import { createHmac, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'dropline_session';
/** A login lasts a working day. */
export const SESSION_LIFETIME_MS = 12 * 60 * 60 * 1000;

function mac(token: string, expires: number): Buffer {
  return createHmac('sha256', token).update(`dropline ops session\n${expires}`).digest();
}

/** The Set-Cookie value of a new session; `secure` when the page was served over HTTPS. */
export function sessionCookie(token: string, secure: boolean, now = Date.now()): string {
  const expires = now + SESSION_LIFETIME_MS;
  const value = `${expires}.${mac(token, expires).toString('base64url')}`;
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_LIFETIME_MS / 1000}${secure ? '; Secure' : ''}`;
}

/** The Set-Cookie value that ends the session. */
export function clearedCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${secure ? '; Secure' : ''}`;
}

/** Whether the request's Cookie header holds an unexpired session made with `token`. */
export function hasSession(token: string, cookieHeader: string | undefined, now = Date.now()): boolean {
  if (!cookieHeader) return false;
  for (const part of cookieHeader.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name !== SESSION_COOKIE) continue;
    const m = /^(\d{1,15})\.([A-Za-z0-9_-]{43})$/.exec(rest.join('='));
    if (!m) continue;
    const expires = Number(m[1]);
    if (expires <= now) continue;
    const given = Buffer.from(m[2]!, 'base64url');
    if (given.length === 32 && timingSafeEqual(given, mac(token, expires))) return true;
  }
  return false;
}
