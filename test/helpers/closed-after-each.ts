// What a test file's tests open (sandboxes, clients, servers), closed after each test.
import { afterEach } from 'vitest';

interface Closable {
  close(): Promise<void>;
}

/** Registers the afterEach; the function it answers keeps what it is given, and gives it back. */
export function closedAfterEach(): <T extends Closable>(opened: T) => T {
  const open: Closable[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((o) => o.close()));
  });
  return (opened) => {
    open.push(opened);
    return opened;
  };
}
