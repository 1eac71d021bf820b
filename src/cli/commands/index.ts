import type { Command } from 'commander';

/** Each command sets the process exit code through `setExit`. */
export type SetExit = (code: number) => void;

export function registerCommands(_program: Command, _setExit: SetExit): void {}
