// Replies to review (#/review): replies that look like an opt-out without being a keyword,
// flagged and never applied (docs/opt-outs.md "Flagged for review"); numbers masked.

import { api, poll } from './api.js';
import { h, table } from './dom.js';
import { t, when } from './i18n.js';

export function reviewView(view) {
  const body = h('div', { id: 'review' }, h('p', { class: 'muted' }, t('review.none')));
  view.append(h('h1', {}, t('review.title')), h('p', { class: 'muted' }, t('review.text')), body);
  return poll(async () => {
    const { body: replies } = await api('/api/replies/review');
    body.replaceChildren(
      replies.length === 0
        ? h('p', { class: 'muted' }, t('review.none'))
        : table(
            [t('review.received'), t('review.from'), t('review.to'), t('review.reply')],
            replies.map((r) => [when(r.receivedAt), r.from, r.to, r.text]),
          ),
    );
  }, 10_000);
}
