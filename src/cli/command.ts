/**
 * What a subcommand is given, apart from `main.ts` so that the subcommands and the program that
 * lists them do not import each other.
 */
import type { Command } from 'commander';

export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

/** A subcommand lives in its own file and adds itself to the program. */
export type RegisterCommand = (program: Command, io: CliIo, setExitCode: (code: number) => void) => void;
