// A rule both store backends apply, written once: a generator that asks for the operations it
// needs (`yield* ask('op', …args)`) and decides with their answers. Each backend gives the
// operations (its own SQL) and runs the rule inside its transaction: SQLite synchronously (no
// transaction stays open across an await), PostgreSQL awaiting each operation.

/** The operations a rule asks for, by name. */
export type Operations<O> = { [K in keyof O]: (...args: never[]) => unknown };

/** One operation asked for. */
export interface Ask<O> {
  readonly op: keyof O;
  readonly args: readonly unknown[];
}

export type Rule<O, T> = Generator<Ask<O>, T, unknown>;

/** The same operations, each answering with a promise (PostgreSQL). */
export type AsyncOperations<O extends Operations<O>> = {
  [K in keyof O]: (...args: Parameters<O[K]>) => Promise<ReturnType<O[K]>>;
};

/** The `ask` of rules over the operations O: `yield* ask('op', …args)` is the operation's answer. */
export function asker<O extends Operations<O>>() {
  return function* ask<K extends keyof O>(op: K, ...args: Parameters<O[K]>): Rule<O, ReturnType<O[K]>> {
    return (yield { op, args }) as ReturnType<O[K]>;
  };
}

/** The operation asked for, called with its arguments (its types were checked by `ask`). */
function perform<O>(ops: { readonly [K in keyof O]: unknown }, ask: Ask<O>): unknown {
  return (ops[ask.op] as unknown as (...args: readonly unknown[]) => unknown)(...ask.args);
}

export function runSync<O extends Operations<O>, T>(rule: Rule<O, T>, ops: O): T {
  let step = rule.next();
  while (!step.done) step = rule.next(perform(ops, step.value));
  return step.value;
}

export async function runAsync<O extends Operations<O>, T>(
  rule: Rule<O, T>,
  ops: AsyncOperations<O>,
): Promise<T> {
  let step = rule.next();
  while (!step.done) step = rule.next(await perform(ops, step.value));
  return step.value;
}
