// What `send` and `retry` share about the delivery reports of what they send (docs/notify.md
// "When the receiver is down", docs/runbook.md "Sending from cron"): the service posts each
// report once, retries it only on a 503, and loses it when nothing answers. So a command that
// sends either receives them itself (--wait) until every accepted recipient has a final status
// or the delivery deadline passes, whatever the file's state, or warns that they will be lost.

import type { Runtime } from '../../app/runtime.ts';
import { redactServiceUrl } from '../../core/redact.ts';
import type { Logger } from '../../log.ts';
import type { Receiver } from '../../notify/receiver.ts';

/** How often a waiting command looks at its file. */
const POLL_MS = 250;
/** How long the check of notify.publicUrl waits for an answer. */
const PROBE_MS = 2000;

/**
 * The receiver this command runs, when it waits and nothing listens on notify.listen (a
 * `dropline run` there records the reports in the same store). Whatever it starts, a warning
 * when no receiver answers at notify.publicUrl: the reports would be lost.
 */
export async function receiveReports(
  rt: Runtime,
  logger: Logger,
  options: { wait: boolean; what: string },
): Promise<Receiver | null> {
  const [{ startReceiver }, { receiverListening }] = await Promise.all([
    import('../../notify/receiver.ts'),
    import('../../app/runtime.ts'),
  ]);
  const { config } = rt.loaded;
  let receiver: Receiver | null = null;
  if (options.wait && !(await receiverListening(rt.loaded)))
    receiver = await startReceiver({
      listen: config.notify.listen,
      path: new URL(rt.loaded.notifyUrl).pathname,
      token: rt.loaded.secrets.notifyToken,
      formerTokens: rt.formerNotifyTokens,
      store: rt.store,
      logger,
    });
  const publicUrl = new URL(rt.loaded.notifyUrl);
  publicUrl.search = '';
  if (await receiverAnswersAt(publicUrl)) return receiver;
  const where =
    config.notify.publicUrl === undefined
      ? `nothing listens on notify.listen (${config.notify.listen})`
      : `no dropline receiver answers at notify.publicUrl (${redactServiceUrl(publicUrl.toString())})`;
  const fix = options.wait
    ? 'Check notify.publicUrl: it must reach a running `dropline run` or this command.'
    : 'Keep a `dropline run` serving it, or use --wait (docs/runbook.md "Sending from cron").';
  process.stderr.write(
    `warning: ${where}. The delivery reports of ${options.what} will be lost: the service does not retry a report nobody answers. ${fix}\n`,
  );
  return receiver;
}

/**
 * Whether a dropline receiver answers at `url` (no token: nothing secret on the wire): it
 * answers a GET on its path 405, allowing POST. A proxy without a receiver behind it answers
 * 502-504 or nothing; a wrong path 404.
 */
async function receiverAnswersAt(url: URL): Promise<boolean> {
  try {
    const res = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(PROBE_MS) });
    await res.body?.cancel();
    return res.status === 405 && res.headers.get('allow') === 'POST';
  } catch {
    return false;
  }
}

/**
 * --wait: the file followed here until nothing more is due to it. Sent when its time comes
 * (scheduled) or when it goes back to sending (a report proved an in-doubt chunk, an in-doubt
 * resend, a resume), its progress checked while submitted, and in any other state (partial,
 * paused, cancelled) its reports awaited while any accepted recipient has no final status or a
 * chunk is in doubt, until the delivery deadline: deliveryTimeoutMs after its last chunk was
 * answered. Each check runs under the file's lease: a daemon beside this command may be the
 * one that drives it. `say` tells the user what it waits for, once per change; with `meter` (a
 * progress line on a terminal shows the pending reports) not while the file is submitted.
 */
export async function followFile(
  rt: Runtime,
  fileId: string,
  options: { say: (line: string) => void; meter?: boolean },
): Promise<void> {
  // Told once per state: a count that goes down as reports arrive is the meter's to show.
  let toldState = '';
  const tell = (state: string, line: string) => {
    if (state !== toldState) options.say(line);
    toldState = state;
  };
  // The deadline read when the file was last seen waiting, and in which state. Read again
  // when the state changed and before it ends the wait: a retry, a resume or a report proving
  // an in-doubt chunk may have answered a newer chunk meanwhile (partial → sending → partial
  // between two looks), and the deadline follows the newest answered chunk.
  let due = null as { state: string; deadline: number } | null;
  for (;;) {
    let file = await rt.store.getFile(fileId);
    if (!file) return;
    if (due && due.state !== file.state) due = null;
    if (file.state === 'sending') await rt.pipeline.drive(fileId);
    else if (file.state === 'scheduled') {
      if (Date.parse(file.scheduledUntil ?? '') <= Date.now()) await rt.pipeline.drive(fileId);
    } else if (file.state === 'submitted') {
      file = (await rt.pipeline.checkProgress(file)) ?? file;
      if (file.state === 'submitted' && !options.meter) {
        const { pendingDelivery } = await rt.store.counts(fileId);
        tell(
          file.state,
          `${file.name} is submitted: waiting for the delivery reports of ${pendingDelivery} recipient(s) until ${file.deliveryDeadline}`,
        );
      }
    } else if (file.state !== 'waiting' && file.state !== 'validating') {
      if (file.state === 'partial') file = (await rt.pipeline.checkProgress(file)) ?? file;
      if (file.state !== 'sending' && file.state !== 'scheduled' && file.state !== 'submitted') {
        const counts = await rt.store.counts(fileId);
        if (counts.pendingDelivery === 0 && counts.chunksInDoubt === 0) return;
        if (due === null || due.state !== file.state || Date.now() >= due.deadline)
          due = { state: file.state, deadline: await deadlineOf(rt, fileId) };
        const what = [
          counts.pendingDelivery > 0 ? `${counts.pendingDelivery} accepted recipient(s)` : '',
          counts.chunksInDoubt > 0
            ? `${counts.inDoubt} recipient(s) of ${counts.chunksInDoubt} chunk(s) in doubt`
            : '',
        ].join(counts.pendingDelivery > 0 && counts.chunksInDoubt > 0 ? ' and ' : '');
        const until = `${new Date(due.deadline).toISOString()} (deliveryTimeoutMs after its last chunk's answer)`;
        if (Date.now() >= due.deadline) {
          options.say(
            `${file.name} is ${file.state}: the delivery reports of ${what} did not come by ${until}`,
          );
          return;
        }
        tell(
          `${file.state} ${due.deadline}`,
          `${file.name} is ${file.state}: waiting for the delivery reports of ${what} until ${until}`,
        );
      }
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** deliveryTimeoutMs after the file's last accepted or in-doubt chunk was answered. */
async function deadlineOf(rt: Runtime, fileId: string): Promise<number> {
  const answered = await rt.store.listChunks(fileId, ['accepted', 'in_doubt']);
  const last = answered.reduce((t, c) => Math.max(t, Date.parse(c.updatedAt)), 0);
  return last + rt.loaded.config.deliveryTimeoutMs;
}
