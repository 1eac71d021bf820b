// Parsers of numeric flags: a value that is not a number in range is a usage error (exit 2)
// naming the flag and what it takes, never a silent default (`--limit abc` showed 50 files).
import { InvalidArgumentError } from 'commander';

/** Each command sets the process exit code through `setExit`. */
export type SetExit = (code: number) => void;

/** A number from min to max (an integer when `integer`). */
export function numberOption(min: number, max: number, integer = false): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (
      value.trim() === '' ||
      !Number.isFinite(n) ||
      n < min ||
      n > max ||
      (integer && !Number.isInteger(n))
    ) {
      throw new InvalidArgumentError(`expected ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
    }
    return n;
  };
}

/** The description of every `--json` flag: what it prints, and where the logs go. */
export function jsonHelp(what: string): string {
  return `print ${what} as JSON on stdout (logs stay on stderr)`;
}
