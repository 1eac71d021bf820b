// The ops API as the pages call it, and the polling every view refreshes with.

import { t } from './i18n.js';
import { notice } from './notice.js';
import { errorText } from './wording.js';

export class Unauthorized extends Error {}

/** A JSON request to the ops API; its answer's body, or an Error with the API's message. */
export async function api(path, init = {}) {
  const res = await fetch(path, { credentials: 'same-origin', ...init });
  if (res.status === 401) throw new Unauthorized('login required');
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const err = new Error(body?.error ?? `${res.status} ${res.statusText}`);
    err.status = res.status;
    // The refusal's code and parameters: errorText words it in the page's language.
    err.code = body?.code;
    err.params = body?.params ?? {};
    throw err;
  }
  return { body, res };
}

let onUnauthorized = () => {};
/** What to do when the API asks for the token (the app shows the login form). */
export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

/** The API asked for the token: the app's answer (its login form). */
export function unauthorized() {
  onUnauthorized();
}

/** Runs `fn` now and again `ms` after each run ends (ms may be a function); returns stop. */
export function poll(fn, ms) {
  let stopped = false;
  let timer;
  const tick = async () => {
    try {
      await fn();
    } catch (err) {
      if (err instanceof Unauthorized) {
        stopped = true;
        onUnauthorized();
        return;
      }
      notice(t('error.generic', { error: errorText(err) }));
    }
    if (!stopped) timer = setTimeout(tick, typeof ms === 'function' ? ms() : ms);
  };
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
