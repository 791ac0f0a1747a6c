/**
 * What the `emulate` commands share about their local credentials: `--token-env NAME` keeps a
 * token of the caller's across starts (read from the environment, never from the command line,
 * which other users of the machine can read); without it each start makes fresh ones. The tokens
 * are printed on stdout, for the person who started the emulator, and never logged.
 */
import type { Command } from 'commander';
import { CliError, note } from './output.js';

const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Adds `--token-env <NAME>` to an `emulate` subcommand; `what` names the token it sets. */
export function tokenEnvOption(command: Command, what: string): Command {
  return command.option(
    '--token-env <NAME>',
    `take ${what} from environment variable NAME (default: a fresh random one at every start)`,
  );
}

/** The token in environment variable `name`, or undefined when no name is given. */
export function tokenFromEnv(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  if (!ENV_NAME_RE.test(name)) throw new CliError('--token-env: expected an environment variable name');
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new CliError(`--token-env: environment variable ${name} is not set (or empty)`);
  }
  return value;
}

/** The line after the tokens: where they came from (stderr, so stdout stays what a script reads). */
export function noteTokenOrigin(tokenEnv: string | undefined): void {
  note(
    tokenEnv === undefined
      ? 'these tokens are new at every start (tokens from an earlier start get 401); --token-env NAME keeps one'
      : `the first token is the one in ${tokenEnv}; any other is new at every start`,
  );
}
