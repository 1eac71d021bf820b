// The page's own messages: a notice at the top, and a confirmation before an action.

let noticeTimer;
export function notice(text, kind = 'error') {
  const el = document.getElementById('notice');
  el.textContent = text;
  el.className = kind;
  el.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => {
    el.hidden = true;
  }, 10_000);
}

/** Asks the reader to confirm `text`: whether they said yes. */
export function confirmed(text) {
  const dialog = document.getElementById('confirm');
  document.getElementById('confirm-text').textContent = text;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), { once: true });
  });
}
