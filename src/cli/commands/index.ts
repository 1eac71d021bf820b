import type { Command } from 'commander';
import { registerCompliance } from './compliance.ts';
import { registerFileCommands } from './files.ts';
import type { SetExit } from './options.ts';
import { registerOptouts } from './optouts.ts';
import { registerPrune } from './prune.ts';
import { registerReplies } from './replies.ts';
import { registerRun } from './run.ts';
import { registerSandbox } from './sandbox.ts';
import { registerSend } from './send.ts';
import { registerValidate } from './validate.ts';
import { registerWorkers } from './workers.ts';

export function registerCommands(program: Command, setExit: SetExit): void {
  registerValidate(program, setExit);
  registerRun(program, setExit);
  registerSend(program, setExit);
  registerFileCommands(program, setExit);
  registerPrune(program, setExit);
  registerWorkers(program, setExit);
  registerReplies(program, setExit);
  registerOptouts(program, setExit);
  registerCompliance(program, setExit);
  registerSandbox(program, setExit);
}
