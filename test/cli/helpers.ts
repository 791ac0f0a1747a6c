/** Runs the real `syncrelay` command as a child process (node + tsx on src/cli/main.ts). */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const MAIN = join(ROOT, 'src/cli/main.ts');
/** Absolute, so a child whose cwd is a temp dir still finds the loader. */
const TSX = join(ROOT, 'node_modules/tsx/dist/loader.mjs');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  timeoutMs?: number;
  /** Written to the command's standard input, which is then closed. */
  input?: string;
}

/** The parent's environment without any syncrelay setting, so each test states its own. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k === 'DATABASE_URL' || k === 'REDIS_URL' || k.startsWith('SYNC_') || k.startsWith('SYNCRELAY_')) continue;
    env[k] = v;
  }
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

/** Runs `syncrelay <args>` to completion (killed after `timeoutMs`). */
export function runCli(args: readonly string[], opts: CliOptions = {}): Promise<CliResult> {
  return new Promise((done) => {
    const child = execFile(
      process.execPath,
      ['--import', TSX, MAIN, ...args],
      {
        env: cleanEnv(opts.env),
        cwd: opts.cwd ?? ROOT,
        timeout: opts.timeoutMs ?? 30_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const e = err as (Error & { code?: number | string; signal?: NodeJS.Signals }) | null;
        done({
          code: e ? (typeof e.code === 'number' ? e.code : null) : 0,
          signal: e?.signal ?? null,
          stdout: String(stdout),
          stderr: String(stderr),
        });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

/** Starts a long-running `syncrelay <args>`; `exited` resolves with its result. */
export function startCli(
  args: readonly string[],
  opts: CliOptions = {},
): { child: ChildProcess; exited: Promise<CliResult>; stderr: () => string } {
  const child = spawn(process.execPath, ['--import', TSX, MAIN, ...args], {
    env: cleanEnv(opts.env),
    cwd: opts.cwd ?? ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
  const exited = new Promise<CliResult>((done) =>
    child.on('close', (code, signal) => {
      clearTimeout(killer);
      done({ code, signal, stdout, stderr });
    }),
  );
  return { child, exited, stderr: () => stderr };
}

/** Resolves once `check()` is true (polling), or fails after `timeoutMs`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The stderr lines that are not JSON log records. */
export function messageLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{'));
}

export function tempDir(tag: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `syncrelay-cli-${tag}-`));
}

export async function removeDir(dir: string | undefined): Promise<void> {
  if (dir) await rm(dir, { recursive: true, force: true });
}

export function parseJson<T = Record<string, unknown>>(text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new Error(`not JSON: ${text}`);
  }
}
