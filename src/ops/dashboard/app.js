// The dashboard's entry: the language, the login when the API asks for it, and the views by
// the URL's hash (#/, #/file/<fileId>, #/check, #/health, #/review). Every view polls the JSON API.

import { api, Unauthorized, whenUnauthorized } from './api.js';
import { checkView } from './check-view.js';
import { fileView } from './file-view.js';
import { healthView } from './health-view.js';
import { pickLanguage, setEnglishCodes, setLanguage, t } from './i18n.js';
import { listView } from './list-view.js';
import { loginView } from './login-view.js';
import { notice } from './notice.js';
import { reviewView } from './review-view.js';

const view = document.getElementById('view');
const lang = document.getElementById('lang');
const logout = document.getElementById('logout');
let meta = null;
let stop = () => {};

function translatePage() {
  for (const el of document.querySelectorAll('[data-t]')) el.textContent = t(el.dataset.t);
  lang.value = document.documentElement.lang;
}

function showLogin() {
  rendering++;
  stop();
  meta = null;
  view.replaceChildren();
  stop = loginView(view, () => void render());
}

/** The fileId of a `#/file/…` link; a link cut inside an escape (`%E0%A4%A`) as it is written. */
function fileIdOf(encoded) {
  try {
    return decodeURIComponent(encoded);
  } catch {
    return encoded;
  }
}

/** Which render is the latest: one that awaited while another began gives up. */
let rendering = 0;

async function render() {
  const mine = ++rendering;
  stop();
  stop = () => {};
  view.replaceChildren();
  try {
    if (!meta) {
      meta = (await api('/api/meta')).body;
      setEnglishCodes(meta.texts);
    }
  } catch (err) {
    if (mine !== rendering) return;
    if (err instanceof Unauthorized) return showLogin();
    notice(t('error.generic', { error: err.message }));
    return;
  }
  if (mine !== rendering) return;
  logout.hidden = !meta.login;
  const hash = location.hash || '#/';
  for (const a of document.querySelectorAll('header nav a'))
    a.classList.toggle(
      'current',
      hash === a.getAttribute('href') || (a.getAttribute('href') === '#/' && hash.startsWith('#/file/')),
    );
  if (hash.startsWith('#/file/')) stop = fileView(view, fileIdOf(hash.slice('#/file/'.length)), meta);
  else if (hash === '#/check') stop = checkView(view, meta);
  else if (hash === '#/health') stop = healthView(view);
  else if (hash === '#/review') stop = reviewView(view);
  else stop = listView(view, meta);
}

whenUnauthorized(showLogin);
setLanguage(pickLanguage());
translatePage();
lang.addEventListener('change', () => {
  setLanguage(lang.value);
  translatePage();
  void render();
});
logout.addEventListener('click', async () => {
  await fetch('/logout', { method: 'POST', credentials: 'same-origin' });
  showLogin();
});
window.addEventListener('hashchange', () => void render());
void render();
