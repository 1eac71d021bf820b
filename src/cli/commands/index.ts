import type { Command } from 'commander';
import { registerSandbox } from './sandbox.ts';
import { registerValidate } from './validate.ts';

/** Each command sets the process exit code through `setExit`. */
export type SetExit = (code: number) => void;

export function registerCommands(program: Command, setExit: SetExit): void {
  registerValidate(program, setExit);
  registerSandbox(program, setExit);
}
