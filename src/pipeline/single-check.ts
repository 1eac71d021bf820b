// One check of a list at a time (docs/opt-outs.md "Opt-out lists", "Consent lists"), shared by
// the opt-out lists and the consent list: a caller that arrives while a check runs waits for
// the next one, started after the running one ends (joined by every caller arriving
// meanwhile), so a file that starts right after a change sees it.

export class SingleCheck {
  #running: Promise<void> | null = null;
  #queued: Promise<void> | null = null;

  /** Runs `fn` (a check) now, or after the one running; never two at once. */
  run(fn: () => Promise<void>): Promise<void> {
    if (this.#queued) return this.#queued;
    const running = this.#running;
    if (running) {
      const next = running
        .catch(() => {})
        .then(() => {
          this.#queued = null;
          return this.run(fn);
        });
      this.#queued = next;
      return next;
    }
    const run = fn().finally(() => {
      if (this.#running === run) this.#running = null;
    });
    this.#running = run;
    return run;
  }
}
