/**
 * `syncrelay credentials rotate-key`, and where the CLI reads a credential from: an environment
 * variable, a file or stdin — never the command line, which other users of the machine can read.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { rotateCredentialKeys, validateCredential } from '../../secrets/credentials.js';
import { CliError, printable, printJson, printLine } from '../output.js';
import { withSession } from '../session.js';

export interface CredentialSourceOptions {
  credentialEnv?: string;
  credentialFile?: string;
  credentialStdin?: boolean;
}

const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Adds --credential-env, --credential-file and --credential-stdin to `command`. */
export function credentialSourceOptions(command: Command): Command {
  return command
    .option('--credential-env <NAME>', 'read the credential from environment variable NAME (e.g. GITHUB_TOKEN)')
    .option('--credential-file <PATH>', 'read the credential from a file (one trailing newline is dropped)')
    .option('--credential-stdin', 'read the credential from standard input (one trailing newline is dropped)');
}

/** The credential from the one source named, undefined when none is; refuses two sources or an unset variable. */
export async function readCredential(
  opts: CredentialSourceOptions,
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<string | undefined> {
  const named = [opts.credentialEnv, opts.credentialFile, opts.credentialStdin].filter((x) => x !== undefined);
  if (named.length > 1) {
    throw new CliError('give the credential through one of --credential-env, --credential-file, --credential-stdin');
  }
  let value: string | undefined;
  if (opts.credentialEnv !== undefined) value = fromEnv(opts.credentialEnv);
  else if (opts.credentialFile !== undefined) value = dropNewline(await fromFile(opts.credentialFile));
  else if (opts.credentialStdin) value = dropNewline(await fromStream(stdin));
  if (value !== undefined) validateCredential(value);
  return value;
}

function fromEnv(name: string): string {
  if (!ENV_NAME_RE.test(name)) throw new CliError('--credential-env: expected an environment variable name');
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new CliError(`--credential-env: environment variable ${name} is not set (or empty)`);
  }
  return value;
}

async function fromFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code ?? 'error';
    throw new CliError(`--credential-file: cannot read ${path} (${code})`);
  }
}

export async function fromStream(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

export function dropNewline(text: string): string {
  return text.replace(/\r?\n$/, '');
}

export function registerCredentials(program: Command): void {
  const credentials = program.command('credentials').description('manage the encryption of stored credentials');

  credentials
    .command('rotate-key')
    .description('re-encrypt every stored credential under SYNCRELAY_SECRET_KEY')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
Set SYNCRELAY_SECRET_KEY to the new key and SYNCRELAY_SECRET_KEY_PREVIOUS to the old one, then run
this once. Every credential not yet under the new key is decrypted with the key it names (by key
id) and encrypted under the new one, in one transaction: all or nothing. Running it again only
re-encrypts what is left, so a run cut short is simply repeated. Afterwards drop
SYNCRELAY_SECRET_KEY_PREVIOUS everywhere. Key material is never printed, only key ids.

In the embedded mode, rotating away from the generated key file (give its content as
SYNCRELAY_SECRET_KEY_PREVIOUS) removes that file once every credential is under the new key, so
it is never used again: from then on start with SYNCRELAY_SECRET_KEY set.

Example:
  SYNCRELAY_SECRET_KEY="$(cat new.key)" SYNCRELAY_SECRET_KEY_PREVIOUS="$(cat old.key)" \\
    syncrelay credentials rotate-key`,
    )
    .action(async (opts: { json?: boolean }) => {
      const result = await withSession({}, ({ engine }) => rotateCredentialKeys(engine.db, engine.ctx.secrets));
      if (opts.json) return printJson(result);
      printLine(
        `re-encrypted ${result.reencrypted} credential(s) and ${result.reencryptedWebhookSecrets} webhook ` +
          `secret(s); every one is under key ${result.keyId}`,
      );
      if (result.retiredKeyFile) {
        printLine(`removed the superseded key file ${printable(result.retiredKeyFile)}; keep SYNCRELAY_SECRET_KEY set`);
      }
    });
}
