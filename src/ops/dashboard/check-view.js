// Check a file (#/check): a file from the reader's computer checked with a source's rules,
// as `dropline validate --source` does; nothing stored, nothing sent.

import { api, Unauthorized, unauthorized } from './api.js';
import { h, table } from './dom.js';
import { codeText, num, t } from './i18n.js';
import { recipientsRead } from './progress.js';
import { errorText, rejectionText } from './wording.js';

export function checkView(view, meta) {
  const source = h(
    'select',
    { id: 'check-source', name: 'source' },
    meta.sources.map((s) => h('option', { value: s }, s)),
  );
  const input = h('input', { type: 'file', id: 'check-file', accept: '.txt,text/plain', required: true });
  const button = h('button', { type: 'submit', class: 'primary' }, t('check.submit'));
  const result = h('div', { id: 'check-result', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'check' },
    h('label', {}, t('check.source'), source),
    h('label', {}, t('check.file'), input),
    button,
  );
  view.append(h('h1', {}, t('check.title')), h('p', { class: 'muted' }, t('check.text')), form, result);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const file = input.files[0];
    if (!file) return;
    button.disabled = true;
    result.replaceChildren(h('p', { class: 'muted' }, t('check.busy')));
    try {
      const params = new URLSearchParams({ source: source.value, name: file.name });
      const { body } = await api(`/api/validate?${params}`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: file,
      });
      renderCheck(result, body);
    } catch (err) {
      if (err instanceof Unauthorized) return unauthorized();
      result.replaceChildren(h('p', { class: 'error' }, errorText(err)));
    } finally {
      button.disabled = false;
    }
  });
  return () => {};
}

function renderCheck(el, s) {
  const verdict = s.accepted
    ? h('p', { class: 'verdict ok', 'data-accepted': 'true' }, t('check.accepted'))
    : h(
        'div',
        { class: 'verdict bad', 'data-accepted': 'false' },
        h('p', {}, t('check.rejected', { code: s.rejection.code })),
        h('p', {}, rejectionText(s.rejection.code, s.rejection.params)),
        h('p', { class: 'muted' }, codeText(s.rejection.code, 'hint')),
      );
  // The recipients first, as a campaign's page counts them; records (lines) as validate says.
  const counts = { recipients: recipientsRead(s) };
  // Of the suppressed, those without consent for the source's channel (docs/opt-outs.md
  // "Consent lists"): said only when the consent list held some back.
  const noConsent = s.noConsent > 0;
  const shown = ['records', 'valid', 'invalid', 'duplicates', 'suppressed', 'noConsent', 'segments'];
  for (const k of shown) if (k !== 'noConsent' || noConsent) counts[k] = s[k];
  const sep = s.separator === null ? '—' : s.separator === '\t' ? 'TAB' : s.separator;
  el.replaceChildren(
    verdict,
    h(
      'dl',
      { class: 'counts' },
      Object.entries(counts).map(([k, n]) => [h('dt', {}, t(k)), h('dd', { 'data-count': k }, num(n))]),
      [h('dt', {}, t('check.layout')), h('dd', {}, s.layout ? t(`layout.${s.layout}`) : '—')],
      [h('dt', {}, t('check.encoding')), h('dd', {}, s.encoding ?? '—')],
      [h('dt', {}, t('check.separator')), h('dd', {}, sep)],
    ),
    noConsent
      ? h(
          'p',
          { class: 'muted', 'data-code': 'NO_CONSENT' },
          h('code', {}, 'NO_CONSENT'),
          ` ${codeText('NO_CONSENT', 'message')}; ${codeText('NO_CONSENT', 'hint')}`,
        )
      : '',
    s.errors.length
      ? h(
          'section',
          {},
          h('h2', {}, t('check.errors')),
          table(
            [t('col.line'), t('col.code'), t('col.message'), t('col.value')],
            s.errors
              .slice(0, 20)
              .map((e) => [
                String(e.line),
                h('code', {}, e.code),
                codeText(e.code, 'message'),
                e.value ?? '',
              ]),
          ),
        )
      : '',
    s.warnings.length
      ? h(
          'section',
          {},
          h('h2', {}, t('check.warnings')),
          table(
            [t('col.line'), t('col.code'), t('col.message')],
            s.warnings
              .slice(0, 20)
              .map((e) => [String(e.line), h('code', {}, e.code), codeText(e.code, 'message')]),
          ),
        )
      : '',
  );
}
