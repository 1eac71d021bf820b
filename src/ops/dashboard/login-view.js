// The login form, when the API asks for the ops token.

import { h } from './dom.js';
import { t } from './i18n.js';

export function loginView(view, done) {
  const input = h('input', {
    type: 'password',
    id: 'token',
    autocomplete: 'current-password',
    required: true,
  });
  const error = h('p', { class: 'error', role: 'alert' });
  const form = h(
    'form',
    { class: 'login' },
    h('h1', {}, t('login.title')),
    h('p', { class: 'muted' }, t('login.text')),
    h('label', {}, t('login.token'), input),
    h('button', { type: 'submit', class: 'primary' }, t('login.submit')),
    error,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const res = await fetch('/login', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: input.value }),
    });
    if (res.ok) done();
    else error.textContent = t('login.wrong');
  });
  view.append(form);
  input.focus();
  return () => {};
}
